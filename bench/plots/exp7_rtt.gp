# Thesis fig. 5.10: request-reply round-trip times (p50 and p99) vs requesters.
load "common.gp"
set output dir."/exp7_rtt.png"
f = dir."/exp7_rtt.csv"
r(mode, n, col) = (strcol(1) eq mode && $3 == n) ? column(col) : NaN
set multiplot layout 1,2 title "Request-reply round-trip time (thesis fig. 5.10; lower is better)"
set logscale x 2
set logscale y
set xlabel "requesters"
set ylabel "round-trip time (ms)"
do for [m in modes] {
  set title m
  plot for [n in "1 2 4"] f using 2:(r(m, n + 0, 4)) lw 2 lc color(n + 0) title "ours p50, ".n." supplier(s)", \
       for [n in "1 2 4"] f using 2:(r(m, n + 0, 6)) lw 2 dt 3 lc color(n + 0) title "ours p99, ".n." supplier(s)", \
       f using 2:(r(m, 1, 8)) dt 2 lc 0 title "raw p50, 1 supplier", \
       f using 2:(r(m, 1, 10)) dt 4 lc 0 title "raw p99, 1 supplier"
}
unset multiplot
