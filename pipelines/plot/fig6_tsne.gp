# Figure 6: t-SNE of the residual stream at chosen layers before l_start
# (orange: future sinks, grey: other non-informative tokens, blue: the rest)
# and kNN separability of future sinks per layer.
# Inputs: d/tsne.tsv (layer x y class: 0 other, 1 non-informative, 2 future sink),
#         d/separability.tsv (layer separability), panels = "L1 L2 L3"
w = 1200; h = 420
load dir.'/common.gp'
np = words(panels)
set multiplot layout 1,np+1 title title1 noenhanced
unset xtics; unset ytics; unset grid
set key off
cls(c) = c == 2 ? 0xd95f02 : c == 1 ? 0xaaaaaa : 0x386cb0
do for [i=1:np] {
	L = int(word(panels, i))
	set title sprintf('layer %d', L)
	plot d.'/tsne.tsv' using (column("layer")==L && column("class")<2 ? column("x") : NaN):"y":(cls(column("class"))) with points pt 7 ps 0.4 lc rgb variable, \
	     d.'/tsne.tsv' using (column("layer")==L && column("class")==2 ? column("x") : NaN):"y":(cls(column("class"))) with points pt 7 ps 0.6 lc rgb variable
}
set title 'separability'
set xtics; set ytics; set grid
set xlabel 'layer'
set yrange [0:1.05]
plot d.'/separability.tsv' using "layer":"separability" with linespoints pt 7 ps 0.6 lw 2 lc rgb '#d95f02'
unset multiplot
