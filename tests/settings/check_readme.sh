#!/bin/sh
# check_readme.sh PRINTER README - every variable name and alias the plugin
# reads (as printed by `PRINTER --names`) must appear in README, and every
# line of the table PRINTER prints must be a line of README as it is, so
# that the table in docs/settings.md (defaults, ranges, meanings) cannot fall behind
# settings.c and the limits it takes from otm/config.h.
set -u
printer=$1
readme=$2

if [ ! -f "$readme" ]; then
    echo "check_readme: $readme does not exist; paste the table printed by" \
         "$printer into it" >&2
    exit 1
fi
names=$("$printer" --names) || { echo "check_readme: $printer failed" >&2; exit 1; }
missing=0
for name in $names; do
    if ! grep -q -w -- "$name" "$readme"; then
        echo "check_readme: $name is not documented in $readme" >&2
        missing=1
    fi
done
table=$("$printer") || { echo "check_readme: $printer failed" >&2; exit 1; }
stale=$(printf '%s\n' "$table" | grep -v -x -F -f "$readme" || true)
if [ -n "$stale" ]; then
    echo "check_readme: these lines of the table are not in $readme:" >&2
    printf '%s\n' "$stale" >&2
    missing=1
fi
if [ "$missing" -ne 0 ]; then
    echo "check_readme: regenerate the table with $printer" >&2
fi
exit "$missing"
