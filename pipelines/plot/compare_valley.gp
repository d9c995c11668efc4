# Across models: the primary sink-score per layer (the valley) on a
# depth-fraction axis (layer / n_layers), one curve per model.
# Open circles: each model's valley (d/models.tsv valley_frac valley_score).
# Inputs: d/valleys.tsv (model layer frac score), d/models.tsv; models = "A B ..."
load dir.'/common.gp'
set title 'primary sink-score across models' noenhanced
set xlabel 'depth fraction (layer / n\_layers)'
set ylabel 'primary sink-score (position 0)'
set xrange [0:1.02]
set yrange [0:1.15]
set key top center horizontal noenhanced
nm = words(models)
plot for [i=1:nm] d.'/valleys.tsv' using (strcol("model") eq word(models, i) ? column("frac") : NaN):"score" \
     with linespoints pt 7 ps 0.5 lw 2 lc rgb lcs(i) title word(models, i), \
     d.'/models.tsv' using "valley_frac":"valley_score" with points pt 6 ps 2.5 lw 1.5 lc rgb 'black' title 'valley'
