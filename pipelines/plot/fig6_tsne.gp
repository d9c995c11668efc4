# Figure 6: t-SNE of the residual stream at chosen layers before l_start
# (orange: future sinks, grey: non-informative tokens that do not become
# sinks, blue: the rest) and, per layer, the separability of future sinks
# from the controls in the full space: balanced k-NN accuracy and
# silhouette, with the chance level of the balanced accuracy (0.5).
# Inputs: d/tsne.tsv (layer x y class: 0 other, 1 non-informative, 2 future sink),
#         d/separability.tsv (layer separability silhouette), panels = "L1 L2 L3"
w = 1300; h = 440
load dir.'/common.gp'
np = words(panels)
set multiplot layout 1,np+1 title title1 noenhanced
unset xtics; unset ytics; unset grid
cls(c) = c == 2 ? 0xd95f02 : c == 1 ? 0xaaaaaa : 0x386cb0
do for [i=1:np] {
	L = int(word(panels, i))
	set title sprintf('layer %d', L)
	if (i == 1) { set key bottom left font ',8' samplen 1 } else { set key off }
	plot d.'/tsne.tsv' using (column("layer")==L && column("class")==0 ? column("x") : NaN):"y" with points pt 7 ps 0.4 lc rgb '#386cb0' title 'other tokens', \
	     d.'/tsne.tsv' using (column("layer")==L && column("class")==1 ? column("x") : NaN):"y" with points pt 7 ps 0.4 lc rgb '#aaaaaa' title 'controls', \
	     d.'/tsne.tsv' using (column("layer")==L && column("class")==2 ? column("x") : NaN):"y" with points pt 7 ps 0.6 lc rgb '#d95f02' title 'future sinks'
}
set title 'separability of future sinks'
stats d.'/separability.tsv' using "layer" nooutput
l0 = int(STATS_min); l1 = int(STATS_max)
set xrange [l0 - 0.5:l1 + 0.5]
set xtics layer_step(l1 - l0 + 1)
set mxtics 1
set ytics; set grid
set xlabel 'layer'
set yrange [0:1.15]
set key below font ",8" samplen 2
plot 0.5 with lines dt 2 lw 1.5 lc rgb '#777777' title 'chance (k-NN)', \
     d.'/separability.tsv' using "layer":"separability" with linespoints pt 7 ps 0.6 lw 2 lc rgb '#d95f02' title 'balanced k-NN accuracy', \
     d.'/separability.tsv' using "layer":"silhouette" with linespoints pt 5 ps 0.5 lw 2 lc rgb '#1b4f8a' title 'silhouette'
unset multiplot
