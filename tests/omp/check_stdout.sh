#!/bin/sh
# check_stdout.sh - checks the captured stdout of a printf test (run_omp.sh
# --stdout-check "sh check_stdout.sh MODE"); exits 0 if it is right, else
# says what is wrong on stdout (run_omp.sh prints it) and exits 1.
#
# usage: check_stdout.sh MODE FILE
#
#   order  FILE holds, in this order, "host 0", "device 0", "host 1",
#          "device 1", ... "host 999", "device 999" (omp_printf_order) and
#          then its PASS line; no other line, nothing split or merged.
#   big    FILE holds the start line of omp_printf_big, then 10,240 lines
#          "%08d " + 1,014 letters ('a' + (number + j) % 26 for j = 0..1013),
#          numbers 0..10239 in order, then the PASS line; nothing else.
set -u
[ $# -eq 2 ] || { sed -n '6p' "$0" | sed 's/^# //' >&2; exit 2; }
mode=$1
file=$2
[ -r "$file" ] || { echo "check_stdout.sh: cannot read $file"; exit 1; }

case $mode in
order)
    awk -v rounds=1000 '
        function bad(why) { printf "check_stdout.sh order: line %d: %s (line: \"%.80s\")\n", NR, why, $0; failed = 1; exit 1 }
        {
            if (k < 2 * rounds) {
                want = (k % 2 ? "device " : "host ") int(k / 2)
                if ($0 != want) bad("expected \"" want "\"")
                k++
            } else if (!passed && $0 ~ /^PASS omp_printf_order: /) {
                passed = 1
            } else {
                bad("unexpected line after the " 2 * rounds " host and device lines")
            }
        }
        END {
            if (failed) exit 1
            if (k < 2 * rounds) { printf "check_stdout.sh order: only %d of %d lines (next expected: \"%s\")\n", k, 2 * rounds, (k % 2 ? "device " : "host ") int(k / 2); exit 1 }
            if (!passed) { print "check_stdout.sh order: no PASS line at the end"; exit 1 }
            printf "check_stdout.sh order: %d host and device lines in order\n", k
        }' "$file"
    ;;
big)
    awk -v lines=10240 -v body=1014 '
        function bad(why) { printf "check_stdout.sh big: line %d: %s (line: \"%.80s\"..., %d characters)\n", NR, why, $0, length($0); failed = 1; exit 1 }
        BEGIN {
            abc = "abcdefghijklmnopqrstuvwxyz"
            while (length(letters) < body + 26) letters = letters abc
        }
        NR == 1 {
            if ($0 !~ /^omp_printf_big: /) bad("expected the start line \"omp_printf_big: ...\"")
            next
        }
        {
            if (k < lines) {
                want = sprintf("%08d ", k) substr(letters, k % 26 + 1, body)
                if ($0 != want) bad(sprintf("expected line number %08d of 1023 characters", k))
                k++
            } else if (!passed && $0 ~ /^PASS omp_printf_big: /) {
                passed = 1
            } else {
                bad("unexpected line after the " lines " numbered lines")
            }
        }
        END {
            if (failed) exit 1
            if (k < lines) { printf "check_stdout.sh big: only %d of %d numbered lines\n", k, lines; exit 1 }
            if (!passed) { print "check_stdout.sh big: no PASS line at the end"; exit 1 }
            printf "check_stdout.sh big: %d numbered lines, whole and in order\n", k
        }' "$file"
    ;;
*)
    echo "check_stdout.sh: unknown mode '$mode' (order, big)"
    exit 2
    ;;
esac
