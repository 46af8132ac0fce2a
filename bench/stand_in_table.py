"""Merge `bench_eval.py --out` reports into bench/results/model_stand_in.json: nDCG@10 per set × model × side.

    python bench/stand_in_table.py --packaged P.json --standin S.json [--packaged-before PB.json]
        [--standin-before SB.json] [--speed SPEED.json] [--out bench/results/model_stand_in.json]

`--*-before` are reports taken with the fusion before the keyword side counted by the query's term share; their
hybrid figures are kept as `beforeTermShare`. A set missing from a report is left as the output file has it, so a
set measured in a later run merges in alone. Other keys already in the file (`standinBefore`) are kept.
`--speed` takes `bench_model_speed.py --out` and keeps each model's time per chunk and per query over the 6-layer
model's, round by round (median of the rounds: the machine is shared, so only paired ratios mean anything).
"""

import argparse, json, statistics, sys
from pathlib import Path


def entry(rep: dict) -> dict:
    "One model's figures on one set: each side's nDCG@10 whole and on each half, and the quality bar."
    held = rep.get("heldOut", {})
    tuning = {r["method"]: r.get("nDCG@10 tuning") for r in rep.get("runs", []) if r["method"] != "sweep"}
    return dict(
        **{
            m: dict(whole=rep[m]["nDCG@10"], heldOut=held.get(m), tuning=tuning.get(m))
            for m in ("vector", "keyword", "hybrid")
        },
        hybridAtLeastBest=rep["hybridAtLeastBest"],
        hybridAtLeastBestHeldOut=rep.get("hybridAtLeastBestHeldOut"),
        distanceScale=rep.get("distanceScale"),
        queries=rep.get("queries"),
        **({"margins": rep["margins"]} if rep.get("margins") else {}),
    )


def speed_ratios(speed: dict, base: str = "6-layer packaged (ONNX int8, fastembed)") -> dict:
    "Each model's ingest and query-embed time over the 6-layer model's, paired round by round (median)."
    b = speed["rounds"][base]
    return {
        name: dict(
            ingestTime=round(statistics.median(x[0] / r[0] for r, x in zip(rs, b)), 2),
            queryTime=round(statistics.median(r[1] / x[1] for r, x in zip(rs, b)), 2),
        )
        for name, rs in speed["rounds"].items()
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for who in ("packaged", "standin"):
        ap.add_argument(f"--{who}", type=Path, help=f"bench_eval.py report of the {who} model")
        ap.add_argument(f"--{who}-before", type=Path, help="the same before the term-share rule")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "model_stand_in.json")
    ap.add_argument("--speed", type=Path, help="bench_model_speed.py --out report")
    ap.add_argument("--note", help="replace the file's note")
    a = ap.parse_args(argv)
    doc = json.loads(a.out.read_text()) if a.out.exists() else dict(note="", sets={})
    for who in ("packaged", "standin"):
        for path, before in ((getattr(a, who), False), (getattr(a, f"{who}_before"), True)):
            if path is None:
                continue
            for s, rep in json.loads(path.read_text()).items():
                row = doc["sets"].setdefault(s, {})
                if before:
                    h = entry(rep)["hybrid"]
                    row.setdefault("beforeTermShare", {})[who] = dict(hybrid=h)
                else:
                    row[who] = entry(rep)
    if a.speed:
        sp = json.loads(a.speed.read_text())
        doc["speed"] = dict(
            chunks=sp["chunks"],
            queries=sp["queries"],
            rounds=len(next(iter(sp["rounds"].values()))),
            overSixLayer=speed_ratios(sp),
        )
    if a.note:
        doc["note"] = a.note
    a.out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
