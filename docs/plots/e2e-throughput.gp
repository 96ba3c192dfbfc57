set terminal pngcairo size 1000,640 noenhanced
set output 'e2e-throughput.png'
datafile = 'e2e-throughput.dat'
titles = '1:0-or-k10 1:0-or-k1000 1:0-and-k10 1:0-and-k1000 0:0-or-k10 0:0-or-k1000 0:0-and-k10 0:0-and-k1000'
set logscale x 2
set logscale y
set grid
set key outside right
set xlabel 'queries per batch'
set ylabel 'queries per second'
set title 'clsearch bench e2e: throughput by batch size (commit 94a3e47)'
plot for [i=0:7] datafile index i using 1:2 with linespoints title word(titles, i+1)
