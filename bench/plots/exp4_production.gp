# Thesis fig. 5.6: production measured at the isolates (producer workers) vs at the broker.
load "common.gp"
set output dir."/exp4_production.png"
f = dir."/exp4_production.csv"
set multiplot layout 1,2 title "Production at the isolates vs at the broker, 64 B (thesis fig. 5.6)"
set xlabel "producers"
set ylabel "messages per second"
do for [m in modes] {
  set title m
  plot f using 2:(sel(m, 4)) lw 2 lc 1 title "ours at the isolates", \
       f using 2:(sel(m, 5)) lw 2 lc 2 title "ours at the broker", \
       f using 2:(sel(m, 6)) dt 2 lc 1 title "raw at the client", \
       f using 2:(sel(m, 7)) dt 2 lc 2 title "raw at the broker"
}
unset multiplot
