# The batcher before and after the work-conserving rule (docs/performance.md,
# "HTTP server"): p50 and p99 latency against throughput, lenet5 binary
# infer, closed loop at 1..64 connections, from inferd-loadgen --sweep CSVs.
# Redraw from the project root: gnuplot docs/sweep/batcher.gp
set terminal pngcairo size 1000,640 noenhanced font ',11'
set output 'docs/sweep/batcher.png'
set title 'lenet5 infer-binary, closed loop, 2-core VM (labels: connections)'
set datafile separator ','
set grid
set key top left
set logscale y
set xlabel 'throughput (requests/s)'
set ylabel 'latency (ms)'
set xrange [0:*]
b = 'docs/sweep/batcher-before.csv'
a = 'docs/sweep/batcher-after.csv'
plot b skip 1 using 8:13 with linespoints lw 2 pt 6 dt 2 lc rgb '#c04040' title 'before: p99', \
     b skip 1 using 8:11 with linespoints lw 2 pt 7 lc rgb '#c04040' title 'before: p50', \
     a skip 1 using 8:13 with linespoints lw 2 pt 6 dt 2 lc rgb '#2060c0' title 'after: p99', \
     a skip 1 using 8:11 with linespoints lw 2 pt 7 lc rgb '#2060c0' title 'after: p50', \
     b skip 1 using 8:11:(sprintf('%g', $2)) with labels offset 0,1 textcolor rgb '#c04040' notitle, \
     a skip 1 using 8:11:(sprintf('%g', $2)) with labels offset 0,-1 textcolor rgb '#2060c0' notitle
