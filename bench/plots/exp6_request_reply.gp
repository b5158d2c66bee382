# Thesis fig. 5.9: request-reply throughput vs requesters, one line per supplier count.
load "common.gp"
set output dir."/exp6_request_reply.png"
f = dir."/exp6_request_reply.csv"
r(mode, n, col) = (strcol(1) eq mode && $3 == n) ? column(col) : NaN
set multiplot layout 1,2 title "Request-reply throughput vs requesters (thesis fig. 5.9)"
set logscale x 2
set xlabel "requesters (one ask in flight each)"
set ylabel "replies per second"
do for [m in modes] {
  set title m
  plot for [n in "1 2 4"] f using 2:(r(m, n + 0, 5)) lw 2 lc color(n + 0) title "ours, ".n." supplier(s)", \
       for [n in "1 2 4"] f using 2:(r(m, n + 0, 6)) dt 2 lc color(n + 0) title "raw, ".n." supplier(s)"
}
unset multiplot
