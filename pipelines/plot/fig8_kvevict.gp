# Figure 8: KV-cache eviction (kvevict(1)).  Left: the perplexity ratio to
# the full cache against the budget (cached keys per layer), one line per
# policy (geometric mean over traces), with KL(full || policy) dashed on
# the right axis.  Right: at the middle budget, the attention mass the full
# cache puts on the keys each policy evicted, by layer (mean over traces,
# queries and heads); dotted: the part on secondary sinks.
# Inputs: d/kvevict.tsv (policy budget ppl_ratio kl top1 traces),
# d/kvevict_layers.tsv (policy budget layer lost lost_secondary)
w = 1100
load dir.'/common.gp'
array pol[5] = ['window', 'streaming', 'sinks', 'heavy', 'random']
array col[5] = ['#999999', '#1b9e77', '#d95f02', '#7570b3', '#e7298a']
array ptt[5] = [7, 5, 9, 11, 13]   # streaming and sinks coincide without secondary sinks: open and filled marks
set multiplot layout 1,2 title title1 noenhanced
set title 'next-token cost of a budget' noenhanced
set xlabel 'budget (cached keys per layer)'
set ylabel 'perplexity ratio to the full cache'
set y2label 'KL(full || policy), dashed'
set logscale x 2
set ytics nomirror
set y2tics
set key bmargin center horizontal
# a model whose predictions ignore the cache (the organism's are uniform):
# show a ratio of 1, not rounding noise
stats d.'/kvevict.tsv' using 3 nooutput
if (STATS_max - STATS_min < 1e-3) set yrange [0.999:1.001]
plot for [i=1:5] d.'/kvevict.tsv' using (strcol(1) eq pol[i] ? $2 : NaN):3 with linespoints pt ptt[i] ps 0.8 lw 2 lc rgb col[i] title pol[i], \
     for [i=1:5] d.'/kvevict.tsv' using (strcol(1) eq pol[i] ? $2 : NaN):4 axes x1y2 with lines dt 2 lw 1 lc rgb col[i] notitle
unset logscale x
set autoscale y
unset y2tics; unset y2label
set ytics mirror
stats d.'/kvevict_layers.tsv' using 2 nooutput
B = STATS_min
stats d.'/kvevict_layers.tsv' using 3 nooutput
if (STATS_max <= 16) set xtics 1; else set xtics autofreq
set title sprintf('mass the full cache puts on evicted keys (budget %d)', B) noenhanced
set xlabel 'layer'
set ylabel 'attention mass lost (dotted: on secondary sinks)'
set yrange [0:*]
plot for [i=1:5] d.'/kvevict_layers.tsv' using (strcol(1) eq pol[i] ? $3 : NaN):4 with linespoints pt ptt[i] ps 0.7 lw 2 lc rgb col[i] title pol[i], \
     for [i=1:5] d.'/kvevict_layers.tsv' using (strcol(1) eq pol[i] ? $3 : NaN):5 with lines dt 3 lw 2 lc rgb col[i] notitle
unset multiplot
