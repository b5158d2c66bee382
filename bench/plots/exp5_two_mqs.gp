# Thesis fig. 5.8: production and consumption at the same time through two MQS (producers on one, consumers on the other).
load "common.gp"
set output dir."/exp5_two_mqs.png"
f = dir."/exp5_simultaneous.csv"
s(mode, col) = (strcol(1) eq mode && $2 == 2) ? column(col) : NaN
set multiplot layout 1,2 title "Simultaneous production and consumption, two MQS (producers on one, consumers on the other) (thesis fig. 5.8)"
set xlabel "producers = consumers"
set ylabel "messages per second"
do for [m in modes] {
  set title m
  plot f using 3:(s(m, 5)) lw 2 lc 1 title "ours produce (at the isolates)", \
       f using 3:(s(m, 6)) lw 2 lc 2 title "ours consume", \
       f using 3:(s(m, 7)) dt 2 lc 1 title "raw produce", \
       f using 3:(s(m, 8)) dt 2 lc 2 title "raw consume"
}
unset multiplot
