#!/usr/bin/env bash
# Build culturekb's wheel, install it into a fresh virtual environment and smoke-test the installed copy:
# `culturekb --version`, a KB built from the ArtEmis sample shipped in the wheel, and a lookup in it.
#
#   scripts/wheel_smoke.sh              # offline: the wheel alone (--no-deps) in a fresh venv, its dependencies
#                                       # read from the dev venv's site-packages (PYTHONPATH), never its source tree
#   WHEEL_SMOKE_FULL=1 scripts/wheel_smoke.sh   # a real fresh install: pip resolves every dependency
#                                               # (culturekb[retrieval,api]) from the package index
#
# `make wheel-check` runs it; tests/test_packaging.py runs it too when asked (pytest -m packaging).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/culturekb-wheel.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT

echo "== build the wheel"
# --no-isolation: setuptools from the dev venv, so that the build works offline
"$PY" -m build --wheel --no-isolation --outdir "$WORK/dist" "$ROOT" > "$WORK/build.log" 2>&1 \
  || { cat "$WORK/build.log"; exit 1; }
WHEEL=$(ls "$WORK"/dist/culturekb-*.whl)
echo "$WHEEL"

echo "== install it into a fresh venv"
if [ "${WHEEL_SMOKE_FULL:-0}" = 1 ]; then
  "$PY" -m venv "$WORK/venv"
  "$WORK/venv/bin/python" -m pip install -q "${WHEEL}[retrieval,api]"
else
  "$PY" -m venv --without-pip "$WORK/venv"
  "$PY" -m pip --python "$WORK/venv/bin/python" install -q --no-deps "$WHEEL"
  PYTHONPATH=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  export PYTHONPATH
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 XDG_CACHE_HOME="$WORK/xdg"
cd "$WORK"  # not the source tree: the installed copy must be the one imported
CKB="$WORK/venv/bin/culturekb"
VPY="$WORK/venv/bin/python"

echo "== smoke test"
WHERE=$("$VPY" -c 'import culturekb, pathlib; print(pathlib.Path(culturekb.__file__).resolve().parent)')
case "$WHERE" in
  "$WORK"/venv/*) echo "imported from $WHERE" ;;
  *) echo "FAIL: culturekb imported from $WHERE, not from the fresh venv"; exit 1 ;;
esac
VERSION=$("$CKB" --version)
EXPECTED="culturekb $("$VPY" -c 'from importlib.metadata import version; print(version("culturekb"))')"
[ "$VERSION" = "$EXPECTED" ] || { echo "FAIL: --version says '$VERSION', the metadata '$EXPECTED'"; exit 1; }
echo "$VERSION"
SAMPLE="$WHERE/data/demo/artemis_demo.csv"
[ -f "$SAMPLE" ] || { echo "FAIL: the wheel lacks $SAMPLE"; exit 1; }
"$CKB" build "$SAMPLE" --out kb --split all --cache-dir cache --json > build.json
[ -f kb/manifest.json ] && [ -f kb/run.log ] || { echo "FAIL: no KB written"; exit 1; }
CONCEPT=$("$VPY" -c 'import json; print(json.loads(open("kb/tuples.jsonl").readline())["concept"])')
CULTURE=$("$VPY" -c 'import json; print(json.loads(open("kb/tuples.jsonl").readline())["culture"])')
"$CKB" index --kb kb > /dev/null
"$CKB" lookup "$CONCEPT" --culture "$CULTURE" --kb kb --json > lookup.json
"$VPY" - "$CONCEPT" <<'PY'
import json, sys
hits = json.load(open("lookup.json"))
text = json.dumps(hits)
assert sys.argv[1] in text and '"exact"' in text, text[:500]
print(f"lookup of {sys.argv[1]!r}: exact match found")
PY
echo "== wheel smoke test passed"
