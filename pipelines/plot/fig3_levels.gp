# Figure 3: secondary episodes at (l_start, lifetime), coloured by level
# (grey: not assigned to a level), with a legend.  Integer coordinates get a
# small deterministic jitter so that repeated points stay visible.
# Input: d/episodes.tsv (l_start lifetime level)
load dir.'/common.gp'
set title title1 noenhanced
set xlabel 'l\_start (layer)'
set ylabel 'lifetime (layers)'
stats d.'/episodes.tsv' using "level" nooutput
lmax = int(STATS_max)
stats d.'/episodes.tsv' using (column("level") == 0 ? 1 : 0) nooutput
lmin = STATS_sum > 0 ? 0 : 1
stats d.'/episodes.tsv' using "l_start" nooutput
x0 = int(STATS_min); x1 = int(STATS_max)
stats d.'/episodes.tsv' using "lifetime" nooutput
y1 = int(STATS_max)
set xrange [x0 - 1.5:x1 + 1.5]
set yrange [0:y1 * 1.2 + 1]
set xtics layer_step(x1 - x0 + 3)
set ytics layer_step(y1)
set mxtics 1; set mytics 1
set key top left
r0 = rand(42)
jit(v) = v + 0.5*(rand(0) - 0.5)
plot for [L=lmin:lmax] d.'/episodes.tsv' using (column("level") == L ? jit(column("l_start")) : NaN):(jit(column("lifetime"))) \
     with points pt 7 ps 0.7 lc rgb lcs(L) title (L ? sprintf('level %d', L) : 'no level')
