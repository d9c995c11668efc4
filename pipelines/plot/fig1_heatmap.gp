# Figure 1: sink-score (attention received, mean over heads) per layer and
# position for one trace; sink episodes drawn as vertical bars from l_start
# to l_end (translucent black: secondary, blue: primary).
# Inputs: d/heatmap.tsv (layer pos score), d/episodes_first.tsv (pos l_start l_end primary)
w = 900; h = 500
load dir.'/common.gp'
set title title1 noenhanced
set xlabel 'position'
set ylabel 'layer'
set cblabel 'sink-score (position 0 saturates)'
set grid noxtics noytics
set key off
set autoscale xfix; set autoscale yfix
# colour scale up to the strongest secondary score, so that position 0 (the
# primary sink, far stronger) saturates instead of washing out the rest
stats d.'/heatmap.tsv' using (column("pos") > 0 ? column("score") : NaN) nooutput
if (STATS_max > 0) set cbrange [0:STATS_max]
plot d.'/heatmap.tsv' using "pos":"layer":"score" with image, \
     d.'/episodes_first.tsv' using "pos":(column("l_start")-0.5):(0):(column("l_end")-column("l_start")+1):(int(column("primary")) ? 0x60386cb0 : 0xa0000000) \
       with vectors nohead lw 1 lc rgb variable
