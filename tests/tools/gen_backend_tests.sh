#!/usr/bin/env bash
# Generate the ONNX backend test data (node tests) at test time from the PyPI onnx package.
#
#   tests/tools/gen_backend_tests.sh DIR          (PYTHON=python3 by default: pyenv, has onnx)
#
# Produces the standard layout used by onnx's backend tests:
#   DIR/node/<test_name>/model.onnx + test_data_set_0/{input_N.pb,output_N.pb}   (~1.6k tests)
#   DIR/simple/<test_name>/...              (small model tests, same generator)
#   DIR/pytorch-converted/, DIR/pytorch-operator/   (copied: shipped as data in the wheel)
# "real" model tests are skipped (they need downloads).
#
# Why not just `backend-test-tools generate-data -o DIR`: in onnx 1.23 that command only
# emits model tests (simple/real), not node tests, and the wheel ships no data/node. We call
# the same writer (onnx.backend.test.cmd_tools.generate_data) with the node cases added.
# Output is deterministic (onnx seeds numpy with 0 before each test case).
# Idempotent: skipped when DIR/.onnx_backend_stamp names the installed onnx version.
set -euo pipefail
DIR=${1:?usage: $0 OUTPUT_DIR}
# Two suites are run (tests/e2e/backend_node_test.cc): onnx 1.16's (opsets up to
# 21; scripts/setup.sh installs it in .cache/onnx-1.16, the default here) and
# the project venv's current onnx (PYTHON=.venv/bin/python; 1.23: opsets up to
# 28). Without either venv the installed onnx is used.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEFAULT_PY=python3
[[ -x "$ROOT/.venv/bin/python" ]] && DEFAULT_PY="$ROOT/.venv/bin/python"
[[ -x "$ROOT/.cache/onnx-1.16/bin/python" ]] && DEFAULT_PY="$ROOT/.cache/onnx-1.16/bin/python"
PY=${PYTHON:-$DEFAULT_PY}
VERSION=$("$PY" -c 'import onnx; print(onnx.__version__)')
STAMP="$DIR/.onnx_backend_stamp"

count() { find "$DIR" -mindepth 2 -maxdepth 2 -type d | wc -l; }

# The stamp's suffix changes whenever this generator's output changes.
STAMP_TEXT="onnx $VERSION, old opsets raised to 7"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$STAMP_TEXT" ]]; then
  echo "backend tests for onnx $VERSION already in $DIR: $(find "$DIR/node" -mindepth 1 -maxdepth 1 -type d | wc -l) node tests, $(count) total"
  exit 0
fi

rm -rf "$DIR/node" "$DIR/simple" "$DIR/pytorch-converted" "$DIR/pytorch-operator" "$STAMP"
mkdir -p "$DIR"
"$PY" - "$DIR" <<'EOF'
import argparse, os, shutil, sys, warnings
warnings.simplefilter("ignore")
import onnx.backend.test.case.model as model_test
import onnx.backend.test.case.node as node_test
from onnx.backend.test import cmd_tools

out = sys.argv[1]
cases = [c for c in model_test.collect_testcases() if c.kind != "real"] + node_test.collect_testcases(None)
model_test.collect_testcases = lambda: cases          # the writer takes its cases from here
os.makedirs(os.path.join(out, "node"), exist_ok=True)
# onnx <= 1.16 adds the node cases itself from collect_testcases(op_type): give it none twice.
node_test.collect_testcases = lambda *a, **k: []
cmd_tools.generate_data(argparse.Namespace(output=out, clean=False, op_type=None, diff=False))
# A node test written below opset 7 (amptrain imports 7 and up) is raised to 7
# where that changes nothing: every node's op has the same schema at 7 as at the
# model's opset (its since_version at 7 is not above the model's opset). Tests at
# opsets 7-10 run as written, through the importer's legacy-opset rewrites.
import onnx
import onnx.defs
MIN_OPSET = 7
for name in sorted(os.listdir(os.path.join(out, "node"))):
    path = os.path.join(out, "node", name, "model.onnx")
    m = onnx.load(path)
    imports = [o for o in m.opset_import if o.domain in ("", "ai.onnx")]
    if len(imports) != 1 or imports[0].version >= MIN_OPSET:
        continue
    try:
        same = all(n.domain in ("", "ai.onnx") and
                   onnx.defs.get_schema(n.op_type, MIN_OPSET).since_version <= imports[0].version for n in m.graph.node)
    except Exception:
        same = False
    if same:
        imports[0].version = MIN_OPSET
        onnx.save(m, path)
for kind in ("pytorch-converted", "pytorch-operator"):
    src = os.path.join(cmd_tools.DATA_DIR, kind)
    if os.path.isdir(src):
        shutil.copytree(src, os.path.join(out, kind))
EOF
echo "$STAMP_TEXT" > "$STAMP"
echo "generated backend tests for onnx $VERSION in $DIR: $(find "$DIR/node" -mindepth 1 -maxdepth 1 -type d | wc -l) node tests, $(count) total"
