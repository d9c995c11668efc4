# Figure 6: t-SNE of the residual stream at chosen layers before l_start
# (orange: future sinks, purple, drawn over them: their twins, the same
# tokens in contexts where they do not become sinks, grey: other non-informative tokens that do
# not become sinks, blue: the rest) and, per layer from layer 1, the
# separability of future sinks from their twins in the full space: k-NN
# accuracy with its Wilson 95% interval, the chance level (labels permuted
# within each token) and its 95th percentile, the silhouette; the accuracy
# against the controls (which differ by identity at every layer) thin; the
# decision layer (tsne(1): the earliest layer from which on the interval
# clears chance's 95th percentile) marked.  Only the first level's scan
# (the panels' level) is drawn.
# Inputs: d/tsne.tsv (layer x y class: 0 other, 1 control, 2 future, 3 twin),
#         d/separability.tsv (tables: level layer ... decision), panels = "L1 L2 L3"
w = 1400; h = 460
load dir.'/common.gp'
np = words(panels)
set multiplot layout 1,np+2 title title1 noenhanced
unset xtics; unset ytics; unset grid
do for [i=1:np] {
	L = int(word(panels, i))
	set title sprintf('layer %d', L)
	if (i == 1) { set key bottom left font ',8' samplen 1 } else { set key off }
	plot d.'/tsne.tsv' using (column("layer")==L && column("class")==0 ? column("x") : NaN):"y" with points pt 7 ps 0.4 lc rgb '#386cb0' title 'other tokens', \
	     d.'/tsne.tsv' using (column("layer")==L && column("class")==1 ? column("x") : NaN):"y" with points pt 7 ps 0.4 lc rgb '#aaaaaa' title 'controls', \
	     d.'/tsne.tsv' using (column("layer")==L && column("class")==2 ? column("x") : NaN):"y" with points pt 7 ps 0.7 lc rgb '#d95f02' title 'future sinks', \
	     d.'/tsne.tsv' using (column("layer")==L && column("class")==3 ? column("x") : NaN):"y" with points pt 7 ps 0.5 lc rgb '#5e3c99' title 'twins (same tokens, no sink)'
}
# the separability panel spans two columns of the layout
set origin (np * 1.0) / (np + 2), 0
set size 2.0 / (np + 2), 0.92
stats d.'/separability.tsv' using "level" nooutput
lv = int(STATS_min)
stats d.'/separability.tsv' using (column("level") == lv ? column("layer") : NaN) nooutput
l0 = int(STATS_min); l1 = int(STATS_max)
# the decision layer of that level (0: none), set as a side effect: a stats
# over no valid point would undefine every STATS_ variable
dl = 0
stats d.'/separability.tsv' using (column("level") == lv && column("decision") == 1 ? (dl = int(column("layer")), 1) : 0) nooutput
set title (dl > 0 ? sprintf('future sinks vs twins (level %d): decision layer %d', lv, dl) \
                  : sprintf('future sinks vs twins (level %d): no decision layer', lv)) noenhanced
set xrange [l0 - 0.5:l1 + 0.5]
set xtics layer_step(l1 - l0 + 1)
set mxtics 1
set ytics; set grid
set xlabel 'layer'
set ylabel 'k-NN accuracy, silhouette'
set yrange [-0.2<*<0:1.05]
# the key inside, opaque, where the accuracy (above) and the silhouette
# (below) leave room before a decision
set key at graph 0.02, graph 0.5 left top font ",8" samplen 2 opaque box lc rgb '#cccccc' 
if (dl > 0) {
	set arrow 1 from dl, graph 0 to dl, graph 1 nohead lw 2 dt 3 lc rgb '#c0203a' front
	set label 1 sprintf(' decision layer %d', dl) at dl, graph 0.06 left tc rgb '#c0203a' font ',9' front
}
sel(c) = column("level") == lv ? column(c) : NaN
plot d.'/separability.tsv' using "layer":(sel("same_chance")) with lines dt 2 lw 1.5 lc rgb '#555555' title 'chance (labels permuted within tokens)', \
     d.'/separability.tsv' using "layer":(sel("same_chance_hi")) with lines dt 3 lw 1.2 lc rgb '#999999' title "chance, 95th percentile", \
     d.'/separability.tsv' using "layer":(sel("same_acc")):(sel("same_lo")):(sel("same_hi")) with yerrorlines pt 7 ps 0.6 lw 2 lc rgb '#d95f02' title 'k-NN accuracy vs twins, Wilson 95%', \
     d.'/separability.tsv' using "layer":(sel("same_silhouette")) with linespoints pt 5 ps 0.5 lw 2 lc rgb '#1b4f8a' title 'silhouette vs twins', \
     d.'/separability.tsv' using "layer":(sel("ctrl_acc")) with linespoints pt 6 ps 0.5 lw 1 lc rgb '#aaaaaa' title 'k-NN accuracy vs controls'
unset multiplot
