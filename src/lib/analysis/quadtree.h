/* quadtree.h - private to analysis/: the Barnes-Hut quadtree over a 2-D
 * embedding that t-SNE's repulsive forces walk (tsne_opt.c).  Points are
 * sorted by their Morton code (16 bits per axis, LSD radix sort, stable);
 * a cell with more than QT_LEAF points is split into its non-empty
 * quadrants, and below the finest cell a range is halved, so every leaf
 * holds at most QT_LEAF points.  Each node holds its centre of mass, its
 * squared width and its range in Morton order. */
#ifndef SS_QUADTREE_H
#define SS_QUADTREE_H

#include <stdint.h>
#include "util/err.h"

#define QT_LEAF 8   /* points per leaf bucket */
#define QT_BITS 16  /* levels */

typedef struct qnode {
	float cx, cy;   /* centre of mass */
	float w2;       /* squared cell width */
	int32_t count;
	int32_t child;  /* first child (children contiguous) or -1 for a leaf */
	int32_t nchild;
	int32_t lo, hi; /* range in Morton order */
} qnode;

typedef struct qtree {
	long n;
	uint32_t *code, *code2;
	int32_t *perm, *perm2; /* Morton order -> point */
	float *ys;             /* positions in Morton order [2n] */
	qnode *nodes;
	long nn, cap;
	int32_t *leaves;       /* leaf nodes in Morton order */
	long nleaf;
} qtree;

/* Allocate t for n points (0, or -1 with e set); qt_free releases it. */
int qt_alloc(qtree *t, long n, ss_err *e);
void qt_free(qtree *t);
/* Build the tree over Y (n x 2, t->n points), reusing t's storage. */
int qt_build(qtree *t, const float *Y, ss_err *e);

#endif
