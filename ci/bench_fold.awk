# bench_fold.awk - folds the figures of several rounds of ci/bench.sh into one
# set: a figure measured several times becomes one, the median of the
# rounds' medians, the least of their minima, the most of their maxima, all
# their runs; a check keeps its first result or a failure.
#
# Input and output: the figures file's lines (bench/bench_util.h):
#   BENCH KEY UNIT MEDIAN MIN MAX RUNS
#   CHECK KEY PASS|FAIL WHAT...
$1 == "CHECK" { k = $2
                if (!(k in cl)) corder[nc++] = k
                if (!(k in cl) || $3 == "FAIL") cl[k] = $0
                next }
$1 != "BENCH" { next }
{ k = $2
  if (!(k in c)) { order[nk++] = k; unit[k] = $3; lo[k] = $5; hi[k] = $6 }
  v[k, c[k]++] = $4 + 0
  if ($5 + 0 < lo[k]) lo[k] = $5
  if ($6 + 0 > hi[k]) hi[k] = $6
  n[k] += $7 }
END { for (i = 0; i < nk; i++) {
          k = order[i]
          for (a = 1; a < c[k]; a++)        # insertion sort of the medians
              for (b = a; b > 0 && v[k, b - 1] > v[k, b]; b--) {
                  t = v[k, b]; v[k, b] = v[k, b - 1]; v[k, b - 1] = t }
          m = c[k] % 2 ? v[k, (c[k] - 1) / 2] : (v[k, c[k] / 2 - 1] + v[k, c[k] / 2]) / 2
          print "BENCH", k, unit[k], m, lo[k], hi[k], n[k] }
      for (i = 0; i < nc; i++) print cl[corder[i]] }
