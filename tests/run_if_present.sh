#!/usr/bin/env bash
# Runs a test only when what it needs is on this machine; otherwise exits 77, which CTest
# (SKIP_RETURN_CODE 77) counts as *skipped*, never as passed.
#   run_if_present.sh --path P            -- CMD...   P must exist
#   run_if_present.sh --python-module M   -- CMD...   /usr/bin/python3 must import M
set -u
need=() ; while [[ $# -gt 0 && "$1" != "--" ]]; do need+=("$1"); shift; done
[[ $# -gt 0 ]] && shift
i=0
while [[ $i -lt ${#need[@]} ]]; do
  kind=${need[$i]} what=${need[$((i + 1))]:-}
  case "$kind" in
    --path)
      if [[ ! -e "$what" ]]; then echo "SKIPPED: $what is absent"; exit 77; fi ;;
    --python-module)
      if ! /usr/bin/python3 -c "import $what" > /dev/null 2>&1; then
        echo "SKIPPED: /usr/bin/python3 cannot import $what"; exit 77
      fi ;;
    *) echo "run_if_present.sh: unknown requirement $kind" >&2; exit 2 ;;
  esac
  i=$((i + 2))
done
exec "$@"
