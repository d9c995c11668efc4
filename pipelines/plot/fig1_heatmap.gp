# Figure 1: sink-score (attention received, mean over heads and over the
# queries i >= j) per layer and position for one trace, positions 0..N-1
# (N = hmpos, default 256, or the whole trace when shorter).  Top: the
# score on a log colour scale from the lower quartile of the cells shown
# (or a thousandth of the strongest, if higher) up to the strongest cell
# shown, position 0 included: neither the primary sink saturates nor the
# secondary sinks wash out.  Cells with fewer than 32 queries (the last
# positions, whose average is over few queries) do not set the scale.  Bottom: the sink episodes sinkdetect found, from l_start
# to l_end (blue: primary, black: secondary), on the same axes.  The scale
# chosen is written to d/heatmap_scale.tsv for the report's caption.
# Inputs: d/heatmap.tsv (layer pos score), d/episodes_first.tsv (pos l_start l_end primary)
w = 900; h = 640
load dir.'/common.gp'
if (!exists("hmpos")) hmpos = 256
stats d.'/heatmap.tsv' using "pos" nooutput
T = int(STATS_max) + 1
N = T < hmpos ? T : hmpos
stats d.'/heatmap.tsv' using "layer" nooutput
L = int(STATS_max)
nq = T > 128 ? 32 : int(T / 4)
stats d.'/heatmap.tsv' using ((column("pos") < N && column("pos") < T - nq) ? column("score") : NaN) nooutput
hi = STATS_max > 0 ? STATS_max : 1
lo = STATS_lo_quartile > hi / 1000 ? STATS_lo_quartile : hi / 1000
rule = STATS_lo_quartile > hi / 1000 ? 'the lower quartile of those cells' : 'a thousandth of the strongest'
set print d.'/heatmap_scale.tsv'
print "positions\tof\tcb_min\tcb_max\tmin_queries\tcb_min_is"
print sprintf("%d\t%d\t%.3g\t%.3g\t%d\t%s", N, T, lo, hi, nq, rule)
set print
set multiplot layout 2,1 title title1 noenhanced
set lmargin at screen 0.08; set rmargin at screen 0.82
xlo = -0.5 - 0.015 * N
set xrange [xlo:N - 0.5]
set yrange [0.5:L + 0.5]
set ytics layer_step(L)
set mytics 1
set grid noxtics noytics
set key off
set ylabel 'layer'
set logscale cb
set cbrange [lo:hi]
set format cb '%g'
set cblabel 'sink-score (log scale)'
set title sprintf('sink-score, positions 0-%d of %d', N - 1, T)
plot d.'/heatmap.tsv' using "pos":"layer":(column("score") > lo ? column("score") : lo) with image
unset logscale cb
unset colorbox
set xlabel 'position'
set title 'sink episodes (sinkdetect): blue primary, black secondary'
plot d.'/episodes_first.tsv' using (column("pos") < N ? column("pos") : NaN):(column("l_start")-0.5):(0):(column("l_end")-column("l_start")+1):(int(column("primary")) ? 0x386cb0 : 0x000000) \
       with vectors nohead lw 1.5 lc rgb variable
unset multiplot
