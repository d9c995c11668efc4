# Across models: each sink level at (l_start / n_layers, lifetime /
# n_layers), one colour per model, the point's area proportional to its
# episode count (largest level of all = the largest point).
# Input: d/levels.tsv (model level l_start lifetime count l_start_frac lifetime_frac)
load dir.'/common.gp'
stats d.'/levels.tsv' using "lifetime_frac" nooutput
ymax = STATS_max
stats d.'/levels.tsv' using "count" nooutput
cmax = STATS_max
set title 'sink levels across models' noenhanced
set xlabel 'l\_start / n\_layers'
set ylabel 'lifetime / n\_layers'
set xrange [0:1]
set yrange [0:ymax * 1.2]
set key top right noenhanced
nm = words(models)
plot for [i=1:nm] d.'/levels.tsv' using (strcol("model") eq word(models, i) ? column("l_start_frac") : NaN):"lifetime_frac":(3 * sqrt(column("count") / cmax)) \
     with points pt 7 ps variable lc rgb lcs(i) title word(models, i)
