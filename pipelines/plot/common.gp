# common.gp - terminal and style shared by every figure.
# Called with -e "fmt='svg'|'png'; out='FILE'; d='TABLES DIR'".
if (!exists("fmt")) fmt = 'svg'
if (!exists("w")) w = 800
if (!exists("h")) h = 500
if (fmt eq 'png') {
	set terminal pngcairo size w,h enhanced font 'DejaVu Sans,10'
} else {
	set terminal svg size w,h enhanced font 'DejaVu Sans,10' background '#ffffff'
}
set output out
set datafile separator tab
set datafile columnheaders
set encoding utf8
set border lw 1
set grid lc rgb '#dddddd'
# colour per level (1..8), grey for unassigned (0)
# lc(i): integer for "lc rgb variable"; lcs(i): string for "lc rgb lcs(i)"
array lvcol[9] = [0x999999, 0x1b9e77, 0xd95f02, 0x7570b3, 0xe7298a, 0x66a61e, 0xe6ab02, 0xa6761d, 0x386cb0]
array lvstr[9] = ['#999999', '#1b9e77', '#d95f02', '#7570b3', '#e7298a', '#66a61e', '#e6ab02', '#a6761d', '#386cb0']
lc(i) = lvcol[int(i) <= 0 ? 1 : (int(i) - 1) % 8 + 2]
lcs(i) = lvstr[int(i) <= 0 ? 1 : (int(i) - 1) % 8 + 2]
set palette defined (0 '#ffffff', 0.25 '#fde0a0', 0.5 '#f08040', 0.75 '#c0203a', 1 '#400020')
# Layer axes are integers: a tick step of 1, 2, 5 or 10 layers for an axis
# that spans n layers, and no minor ticks.
layer_step(n) = n <= 16 ? 1 : n <= 32 ? 2 : n <= 80 ? 5 : 10
