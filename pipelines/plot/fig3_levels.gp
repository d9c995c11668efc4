# Figure 3: secondary episodes at (l_start, lifetime), coloured by level
# (grey: not assigned to a level).  Integer coordinates get a small
# deterministic jitter so that repeated points stay visible.
# Input: d/episodes.tsv (l_start lifetime level)
load dir.'/common.gp'
set title title1 noenhanced
set xlabel 'l\_start (layer)'
set ylabel 'lifetime (layers)'
set offsets 1, 1, 1, 1
set xtics 1
set mxtics 1
set key off
r0 = rand(42)
jit(v) = v + 0.5*(rand(0) - 0.5)
plot d.'/episodes.tsv' using (jit(column("l_start"))):(jit(column("lifetime"))):(lc(column("level"))) \
     with points pt 7 ps 0.7 lc rgb variable
