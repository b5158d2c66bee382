# Thesis fig. 5.3: production throughput (at the broker) vs message size, one producer.
load "common.gp"
set output dir."/exp2_produce_size.png"
f = dir."/exp2_message_size.csv"
set title "Production at the broker vs message size, 1 producer (thesis fig. 5.3)"
set logscale x 2
set logscale y
set xlabel "message size (bytes)"
set ylabel "messages enqueued per second"
plot f using 2:(sel("at-most-once", 8)) lw 2 lc 1 title "ours at-most-once", \
     f using 2:(sel("at-most-once", 9)) dt 2 lc 1 title "raw at-most-once", \
     f using 2:(sel("at-least-once", 8)) lw 2 lc 2 title "ours at-least-once", \
     f using 2:(sel("at-least-once", 9)) dt 2 lc 2 title "raw at-least-once"
