set terminal pngcairo size 2080,480
set output 'loss-time.png'
set multiplot layout 1,4
set grid
set key top right
set xlabel 'wall time (s)'
set ylabel 'validation loss (mean over peers)'
set yrange [2.5:3.2]
set title 'seed 1, none'
plot 'curve-none-fixed.dat' using 1:2 with linespoints title 'fixed', 'curve-none-learn.dat' using 1:2 with linespoints title 'learn', 'curve-none-batch.dat' using 1:2 with linespoints title 'batch', 'curve-none-steps.dat' using 1:2 with linespoints title 'steps', 'curve-none-async.dat' using 1:2 with linespoints title 'async'
set title 'seed 1, slow'
plot 'curve-slow-fixed.dat' using 1:2 with linespoints title 'fixed', 'curve-slow-learn.dat' using 1:2 with linespoints title 'learn', 'curve-slow-batch.dat' using 1:2 with linespoints title 'batch', 'curve-slow-steps.dat' using 1:2 with linespoints title 'steps'
set title 'seed 1, stretch'
plot 'curve-stretch-fixed.dat' using 1:2 with linespoints title 'fixed', 'curve-stretch-learn.dat' using 1:2 with linespoints title 'learn', 'curve-stretch-batch.dat' using 1:2 with linespoints title 'batch', 'curve-stretch-steps.dat' using 1:2 with linespoints title 'steps'
set title 'seed 1, jitter'
plot 'curve-jitter-fixed.dat' using 1:2 with linespoints title 'fixed', 'curve-jitter-async.dat' using 1:2 with linespoints title 'async'
unset multiplot
