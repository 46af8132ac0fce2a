"""The eval folder the benchmarks read (BEIR sets: `<set>/corpus.jsonl`, `queries.jsonl`, `qrels/`).

Order: the `--eval DIR` argument, else `MINIRAG_EVAL_DIR`, else `../shared/eval` beside the repository."""

import argparse, os, sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "eval"


def default_eval_dir() -> Path:
    "MINIRAG_EVAL_DIR if set, else ../shared/eval relative to the repository root."
    return Path(os.environ.get("MINIRAG_EVAL_DIR") or DEFAULT)


def add_eval_arg(ap: argparse.ArgumentParser):
    "Add `--eval DIR` to a benchmark's parser."
    ap.add_argument(
        "--eval",
        dest="eval_dir",
        type=Path,
        default=default_eval_dir(),
        metavar="DIR",
        help=f"folder of BEIR eval sets (default: $MINIRAG_EVAL_DIR or ../shared/eval beside the repo)",
    )


def checked(p: Path) -> Path:
    "`p` if it is a folder, else exit with one line naming it and the fix."
    if not Path(p).is_dir():
        sys.exit(f"eval folder {p} not found; give the folder of eval sets as the argument or set MINIRAG_EVAL_DIR")
    return Path(p)
