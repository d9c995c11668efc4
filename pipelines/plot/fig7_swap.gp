# Figure 7: token swapping.  Fraction of future sinks whose sink no longer
# forms when one component (rows) at one layer (columns) is replaced by the
# mean over non-informative non-sink tokens (all levels and traces; layer 0
# is l_start itself).  Labels are white on dark cells.
# Input: d/swap.tsv (comp layer suppression), comp 0 resid, 1 attn_out, 2 mlp_out
h = 320
load dir.'/common.gp'
set title title1 noenhanced
set xlabel 'layer swapped, relative to l\_start'
set ytics ('resid' 0, 'attn\_out' 1, 'mlp\_out' 2)
set yrange [-0.5:2.5]
set cbrange [0:1]
set cblabel 'suppressed fraction'
set grid noxtics noytics
set key off
set autoscale xfix
set xtics 1
stats d.'/swap.tsv' using "layer" nooutput
set xtics layer_step(STATS_max - STATS_min + 1)
plot d.'/swap.tsv' using "layer":"comp":"suppression" with image, \
     '' using "layer":"comp":(sprintf('%.2f', column("suppression"))):(column("suppression") > 0.55 ? 0xffffff : 0x000000) \
       with labels font ',8' tc rgb variable
