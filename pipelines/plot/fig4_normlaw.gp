# Figure 4: the norm law.  Sink-score and lifetime of each secondary episode
# against the MLP-output norm at l_start, ||m[l_start][j]|| (log axis), with
# least-squares lines y = a + b ln(norm) computed here by gnuplot's stats
# (an independent check of sinklevels' fit; both are printed in report.md).
# Input: d/episodes.tsv (mlp_norm score lifetime level)
w = 1000; h = 450
load dir.'/common.gp'
stats d.'/episodes.tsv' using (log(column("mlp_norm"))):"score" nooutput
a1 = STATS_intercept; b1 = STATS_slope; r1 = STATS_correlation; n1 = STATS_records
stats d.'/episodes.tsv' using (log(column("mlp_norm"))):"lifetime" nooutput
a2 = STATS_intercept; b2 = STATS_slope; r2 = STATS_correlation
set print d.'/normlaw_gnuplot.tsv'
print "y\tintercept\tslope\tr\tn"
print sprintf("score\t%.6g\t%.6g\t%.6g\t%d", a1, b1, r1, n1)
print sprintf("lifetime\t%.6g\t%.6g\t%.6g\t%d", a2, b2, r2, n1)
set print
set multiplot layout 1,2 title title1 noenhanced
set logscale x
set xlabel '||m[l\_start]|| (MLP output norm)'
set key top left
set ylabel 'sink-score (mean over the episode)'
plot d.'/episodes.tsv' using "mlp_norm":"score":(lc(column("level"))) with points pt 7 ps 0.6 lc rgb variable notitle, \
     a1 + b1*log(x) lw 2 lc rgb 'black' title sprintf('%.3g + %.3g ln x', a1, b1)
set ylabel 'lifetime (layers)'
plot d.'/episodes.tsv' using "mlp_norm":"lifetime":(lc(column("level"))) with points pt 7 ps 0.6 lc rgb variable notitle, \
     a2 + b2*log(x) lw 2 lc rgb 'black' title sprintf('%.3g + %.3g ln x', a2, b2)
unset multiplot
