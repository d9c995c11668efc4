# Figure 2: the primary sink's strength per layer (sink-score of position 0,
# mean over traces; the "valley") over the histogram of secondary l_start.
# Inputs: d/primary.tsv (layer score), d/lstart_hist.tsv (l_start count; hist=0
# when there is no secondary episode: the curve alone)
load dir.'/common.gp'
set title title1 noenhanced
set xlabel 'layer'
set ylabel 'primary sink-score (position 0)'
set y2label 'secondary episodes starting here'
set ytics nomirror
set y2tics
stats d.'/primary.tsv' using "layer" nooutput
L = int(STATS_max)
stats (hist ? d.'/lstart_hist.tsv' : d.'/primary.tsv') using 2 nooutput
set y2range [0:(hist ? STATS_max * 1.15 : 1)]
set xrange [0.5:L + 0.5]
set xtics layer_step(L)
set mxtics 1
set yrange [0:1.15]
set style fill solid 0.4 noborder
set boxwidth 0.8
set key top center horizontal
if (hist) {
plot d.'/lstart_hist.tsv' using "l_start":"count" axes x1y2 with boxes lc rgb '#d95f02' title 'secondary l\_start', \
     d.'/primary.tsv' using "layer":"score" with linespoints pt 7 ps 0.6 lw 2 lc rgb '#1b4f8a' title 'primary sink-score'
} else {
unset y2tics; unset y2label
plot d.'/primary.tsv' using "layer":"score" with linespoints pt 7 ps 0.6 lw 2 lc rgb '#1b4f8a' title 'primary sink-score (no secondary episodes)'
}
