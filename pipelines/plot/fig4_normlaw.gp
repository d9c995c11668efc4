# Figure 4: the norm law.  Sink-score at l_start and lifetime of each
# secondary episode against the MLP-output norm at l_start,
# ||m[l_start][j]|| (log axis), with least-squares lines y = a + b ln(norm)
# computed here by gnuplot's stats over the same quantities sinklevels --fit
# fits (score_start and lifetime, scope "all"): an independent check of its
# fit; both are printed in report.md.
# Input: d/episodes.tsv (mlp_norm score_start lifetime level)
w = 1000; h = 450
load dir.'/common.gp'
stats d.'/episodes.tsv' using (log(column("mlp_norm"))):"score_start" nooutput
a1 = STATS_intercept; b1 = STATS_slope; r1 = STATS_correlation; n1 = STATS_records
stats d.'/episodes.tsv' using (log(column("mlp_norm"))):"lifetime" nooutput
a2 = STATS_intercept; b2 = STATS_slope; r2 = STATS_correlation
set print d.'/normlaw_gnuplot.tsv'
print "y\tintercept\tslope\tr\tn"
print sprintf("score_start\t%.6g\t%.6g\t%.6g\t%d", a1, b1, r1, n1)
print sprintf("lifetime\t%.6g\t%.6g\t%.6g\t%d", a2, b2, r2, n1)
set print
stats d.'/episodes.tsv' using "level" nooutput
lmax = int(STATS_max)
stats d.'/episodes.tsv' using (column("level") == 0 ? 1 : 0) nooutput
lmin = STATS_sum > 0 ? 0 : 1
stats d.'/episodes.tsv' using "score_start" nooutput
smax = STATS_max > 0 ? STATS_max : 1
stats d.'/episodes.tsv' using "lifetime" nooutput
tmax = STATS_max
set multiplot layout 1,2 title title1 noenhanced
set logscale x
set xlabel '||m[l\_start]|| (MLP output norm)'
set key top left
set ylabel 'sink-score at l\_start'
set yrange [0:smax * 1.6]
plot for [L=lmin:lmax] d.'/episodes.tsv' using "mlp_norm":(column("level") == L ? column("score_start") : NaN) \
       with points pt 7 ps 0.6 lc rgb lcs(L) title (L ? sprintf('level %d', L) : 'no level'), \
     a1 + b1*log(x) lw 2 lc rgb 'black' title sprintf('%.3g + %.3g ln x (r %.2f)', a1, b1, r1)
set ylabel 'lifetime (layers)'
set yrange [0:tmax * 1.25 + 1]
set ytics layer_step(tmax)
plot for [L=lmin:lmax] d.'/episodes.tsv' using "mlp_norm":(column("level") == L ? column("lifetime") : NaN) \
       with points pt 7 ps 0.6 lc rgb lcs(L) notitle, \
     a2 + b2*log(x) lw 2 lc rgb 'black' title sprintf('%.3g + %.3g ln x (r %.2f)', a2, b2, r2)
unset multiplot
