# Figure 1: sink-score (attention received, mean over heads) per layer and
# position for one trace; sink episodes drawn as vertical bars from l_start
# to l_end (black: secondary, blue: primary).
# Inputs: d/heatmap.tsv (layer pos score), d/episodes_first.tsv (pos l_start l_end primary)
w = 900; h = 500
load dir.'/common.gp'
set title title1 noenhanced
set xlabel 'position'
set ylabel 'layer'
set cblabel 'sink-score'
set grid noxtics noytics
set key off
set autoscale xfix; set autoscale yfix
plot d.'/heatmap.tsv' using "pos":"layer":"score" with image, \
     d.'/episodes_first.tsv' using "pos":(column("l_start")-0.5):(0):(column("l_end")-column("l_start")+1):(int(column("primary")) ? 0x386cb0 : 0x000000) \
       with vectors nohead lw 2 lc rgb variable
