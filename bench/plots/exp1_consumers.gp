# Thesis fig. 5.1: consumption throughput vs consumers, one line per prefetch; ours solid, raw dashed.
load "common.gp"
set output dir."/exp1_consumers.png"
f = dir."/exp1_consumers.csv"
set multiplot layout 1,2 title "Consumption vs consumers per prefetch, 64 B (thesis fig. 5.1)"
set logscale x 2
set xlabel "consumers"
set ylabel "messages consumed per second"
do for [m in modes] {
  set title m
  plot for [p in "1 4 8 16 64"] f using 3:((sel(m, 2) == p + 0) ? $5 : NaN) lw 2 lc color(p + 0) title "ours p=".p, \
       for [p in "1 4 8 16 64"] f using 3:((sel(m, 2) == p + 0) ? $6 : NaN) dt 2 lc color(p + 0) title "raw (multiple acks) p=".p
}
unset multiplot
