# Thesis fig. 5.5: production at the broker with 1, 2 and 4 dde-mqs processes; raw (no MQS) dashed.
load "common.gp"
set output dir."/exp3_produce_mqs.png"
f = dir."/exp3_mqs_scaling.csv"
k(mode, mq, col) = (strcol(1) eq "produce" && strcol(2) eq mode && $3 == mq) ? column(col) : NaN
set multiplot layout 1,2 title "Production at the broker vs producers on 1, 2, 4 MQS (thesis fig. 5.5)"
set logscale x 2
set xlabel "producers"
set ylabel "messages enqueued per second"
do for [m in modes] {
  set title m
  plot for [q in "1 2 4"] f using 4:(k(m, q + 0, 6)) lw 2 lc color(q + 0) title "ours, ".q." MQS", \
       f using 4:(k(m, 1, 7)) dt 2 lc 0 title "raw"
}
unset multiplot
