# Shared by every plot: PNG output, CSV input, and sel(mode, column): the column's value on rows of
# that delivery mode, undefined (not drawn) elsewhere. Called with -e "dir='RESULTS'".
set terminal pngcairo size 1100,480 enhanced font "sans,10"
set datafile separator ","
set key top left box opaque font ",8"
set grid
set style data linespoints
set pointsize 0.8
modes = "at-most-once at-least-once"
sel(mode, col) = (strcol(1) eq mode) ? column(col) : NaN
# A colour per value of a swept parameter (prefetch, MQS count, suppliers).
color(v) = v == 1 ? 1 : v == 2 ? 2 : v == 4 ? 3 : v == 8 ? 4 : v == 16 ? 6 : 7
