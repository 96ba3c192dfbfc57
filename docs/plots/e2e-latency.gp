set terminal pngcairo size 1000,640 noenhanced
set output 'e2e-latency.png'
datafile = 'e2e-latency.dat'
titles = '1:0-or-k10 1:0-or-k1000 1:0-and-k10 1:0-and-k1000 0:0-or-k10 0:0-or-k1000 0:0-and-k10 0:0-and-k1000'
set logscale x 2
set logscale y
set grid
set key outside right
set xlabel 'queries per batch'
set ylabel 'latency per query, ms (solid p50, dashed p99)'
set title 'clsearch bench e2e: latency by batch size (commit 94a3e47)'
plot for [i=0:7] datafile index i using 1:3 with linespoints linecolor i+1 title word(titles, i+1), for [i=0:7] datafile index i using 1:5 with lines dashtype 2 linecolor i+1 notitle
