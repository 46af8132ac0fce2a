"""Peak memory of a sync of a real folder (a 500-file real corpus had been seen at 2.4 GB RSS).

Syncs FOLDER into a temporary index with the packaged model and prints the peak and final resident memory, the memory at
each tenth of the files (flat = bounded by the batch, rising = growing with the corpus), then every jump of more than
60 MB with the file that was about to be read (the jump happened while the files before it were
converted, chunked, embedded or written).

    python bench/bench_sync_memory.py FOLDER
    python bench/bench_sync_memory.py ~/.cache/minirag-fidelity/corpus    # the fidelity corpus: 419 files,
                                                                          # ~26 min on 2 cores
"""

import argparse, json, shutil, tempfile
from pathlib import Path


def rss(key: str = "VmRSS") -> int:
    with open("/proc/self/status") as f:
        return int(next(l for l in f if l.startswith(key)).split()[1]) // 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", type=Path, help="the documents to sync (nothing in it is written)")
    a = ap.parse_args()
    if not a.folder.is_dir():
        raise SystemExit(f"{a.folder} is not a folder; give a folder of documents")
    from minirag.api import Index
    from minirag.wire import to_wire
    from minirag.embed import packaged_model_dir

    work = Path(tempfile.mkdtemp(prefix="bench-sync-memory-"))
    try:
        model = packaged_model_dir(work / "models")
        ix = Index.open(a.folder.resolve(), db_path=work / "idx", model_name=str(model), cache_dir=model.parent)
        log = []
        r = to_wire(ix.sync(progress=lambda done, total, current: log.append((rss(), Path(current).name))))
        print(
            json.dumps(
                dict(
                    files=r["ingested"],
                    failed=r["failed"],
                    seconds=r["seconds"],
                    chunks=to_wire(ix.status())["chunkCount"],
                    peak_rss_mb=rss("VmHWM"),
                    end_rss_mb=rss(),
                )
            )
        )
        marks = sorted({min(len(log) - 1, len(log) * k // 10) for k in range(1, 11)}) if log else []
        print(
            "  RSS at each tenth of the files: " + ", ".join(f"{log[i][0]} MB" for i in marks)
        )  # a plateau = bounded by the batch
        prev = 0
        for m, name in log:
            if m - prev > 60:
                print(f"  +{m - prev} MB -> {m} MB before {name or '(end)'}")
            prev = m
        ix.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
