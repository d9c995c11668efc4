# Figure 7: token swapping.  Fraction of future sinks whose sink no longer
# forms when one component (rows) at one layer (columns) is replaced by the
# mean over non-informative non-sink tokens (all traces, the levels of one
# start layer pooled; layer 0 is l_start itself).  Labels are white on dark cells.
# Input: d/swap.tsv (l_start comp layer suppression n row label): one row
# of cells per (start layer, component), labelled component@l_start.
set datafile separator tab
set datafile columnheaders
stats d.'/swap.tsv' using "row" nooutput
nrow = STATS_max + 1
h = 140 + 45 * nrow
load dir.'/common.gp'
set title title1 noenhanced
set xlabel 'layer swapped, relative to l\_start'
set yrange [-0.5:nrow - 0.5] reverse
set cbrange [0:1]
set cblabel 'suppressed fraction'
set grid noxtics noytics
set key off
set autoscale xfix
set xtics 1
stats d.'/swap.tsv' using "layer" nooutput
set xtics layer_step(STATS_max - STATS_min + 1)
set ytics () noenhanced
# boxes, not an image: start layers differ, so the grid has holes
plot d.'/swap.tsv' using "layer":"row":(column("layer") - 0.5):(column("layer") + 0.5):(column("row") - 0.5):(column("row") + 0.5):"suppression" \
       with boxxy fs solid 1.0 noborder lc palette, \
     '' using "layer":"row":(sprintf('%.2f', column("suppression"))):(column("suppression") > 0.55 ? 0xffffff : 0x000000):ytic(stringcolumn("label")) \
       with labels font ',8' tc rgb variable
