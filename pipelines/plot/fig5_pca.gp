# Figure 5: PCA of the MLP inputs x[l_start] of each level's sinks: variance
# explained per component (left, log axis) and the MLP's gain along each
# component (right: projection of the MLP output on the primary-sink
# direction per unit of input along the component).
# Input: d/pca.tsv (level component explained gain)
w = 1000; h = 450
load dir.'/common.gp'
stats d.'/pca.tsv' using "level" nooutput
lmin = int(STATS_min); lmax = int(STATS_max)   # level 0: an l_start outside every level
set multiplot layout 1,2 title title1 noenhanced
set xlabel 'principal component'
set ylabel 'fraction of variance'
set logscale y
set key top right
plot for [L=lmin:lmax] d.'/pca.tsv' using "component":(column("level")==L ? column("explained") : NaN) \
     with linespoints pt 7 ps 0.5 lc rgb lcs(L) title (L ? sprintf('level %d', L) : 'no level')
unset logscale y
set ylabel 'MLP gain along the component'
plot for [L=lmin:lmax] d.'/pca.tsv' using "component":(column("level")==L ? column("gain") : NaN) \
     with linespoints pt 7 ps 0.5 lc rgb lcs(L) title (L ? sprintf('level %d', L) : 'no level')
unset multiplot
