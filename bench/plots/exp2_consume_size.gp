# Thesis fig. 5.2: consumption throughput vs message size (8 consumers, prefetch 8).
load "common.gp"
set output dir."/exp2_consume_size.png"
f = dir."/exp2_message_size.csv"
set title "Consumption vs message size, 8 consumers, prefetch 8 (thesis fig. 5.2)"
set logscale x 2
set logscale y
set xlabel "message size (bytes)"
set ylabel "messages consumed per second"
plot f using 2:(sel("at-most-once", 5)) lw 2 lc 1 title "ours at-most-once", \
     f using 2:(sel("at-most-once", 6)) dt 2 lc 1 title "raw at-most-once", \
     f using 2:(sel("at-least-once", 5)) lw 2 lc 2 title "ours at-least-once", \
     f using 2:(sel("at-least-once", 6)) dt 2 lc 2 title "raw at-least-once"
