# Figure 5: PCA of the MLP inputs x[l_start] of the sinks starting at each
# l_start (pcaprobe pools the levels that share an l_start; the legend names
# them): variance explained per component (left, log axis) and the MLP's
# gain along each component (right: ||MLP(mean + alpha sd pc)|| / ||MLP(mean)||
# at the largest alpha probed).
# Input: d/pca.tsv (l_start levels component explained gain)
w = 1000; h = 450
load dir.'/common.gp'
# the distinct l_start values and their levels, in table order
starts = system(sprintf("awk -F'\t' 'NR > 1 && !s[$1]++ { printf \"%%s \", $1 }' '%s'", d.'/pca.tsv'))
lvls = system(sprintf("awk -F'\t' 'NR > 1 && !s[$1]++ { printf \"%%s \", $2 }' '%s'", d.'/pca.tsv'))
ng = words(starts)
lab(i) = sprintf('l\_start %s (%s)', word(starts, i), word(lvls, i) eq 'none' ? 'no level' : (strstrt(word(lvls, i), ',') ? 'levels ' : 'level ').word(lvls, i))
stats d.'/pca.tsv' using "component" nooutput
cmax = int(STATS_max)
set multiplot layout 1,2 title title1 noenhanced
set xlabel 'principal component'
set xrange [0.5:cmax + 0.5]
set xtics 1
set mxtics 1
set ylabel 'fraction of variance'
set logscale y
set key top right
plot for [i=1:ng] d.'/pca.tsv' using "component":(column("l_start") == word(starts, i) ? column("explained") : NaN) \
     with linespoints pt 7 ps 0.5 lc rgb lcs(i) title lab(i)
unset logscale y
set ylabel 'MLP gain along the component'
set yrange [0:*]
plot for [i=1:ng] d.'/pca.tsv' using "component":(column("l_start") == word(starts, i) ? column("gain") : NaN) \
     with linespoints pt 7 ps 0.5 lc rgb lcs(i) title lab(i)
unset multiplot
