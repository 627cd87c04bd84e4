#!/usr/bin/env bash
# A bench in --smoke mode passes when it exits 0, its last RESULT line says wrong=0 and its
# output (a pipe here, not a terminal) holds no terminal escape: scripts read `^RESULT `.
# Exit 77 (a GPU bench without a GPU) is passed through for CTest's SKIP_RETURN_CODE.
# usage: smoke_test.sh COMMAND [ARGS...]     (the bench command line, --smoke included)
set -u
out=$("$@")
rc=$?
printf '%s\n' "$out"
[[ $rc -eq 77 ]] && exit 77
if [[ $rc -ne 0 ]]; then echo "FAIL: exit status $rc"; exit 1; fi
if printf '%s' "$out" | grep -q $'\e'; then echo "FAIL: terminal escape in the output"; exit 1; fi
result=$(printf '%s\n' "$out" | grep '^RESULT ' | tail -n 1)
if [[ -z $result ]]; then echo "FAIL: no line starting with 'RESULT '"; exit 1; fi
if [[ " $result " != *" wrong=0 "* ]]; then echo "FAIL: $result"; exit 1; fi
echo "ok: $result"
