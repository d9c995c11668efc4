/* h5io_attr.c - HDF5 attributes (read, write, copy between files) and the
 * links of a group; see h5io.h.
 */
#include "io/h5io.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/h5io_int.h"

/* ---- attributes ------------------------------------------------------- */

/* An open attribute with its type and space (-1 where not open). */
typedef struct attr_h { hid_t a, t, sp; } attr_h;

static void attr_close(attr_h *h)
{
	h5i_close_id(h->sp);
	h5i_close_id(h->t);
	h5i_close_id(h->a);
}

/* Open attribute `name` of obj with its type and space. */
static int attr_open(ss_h5 *f, const char *obj, const char *name, attr_h *h, ss_err *e)
{
	h->a = h->t = h->sp = -1;
	if (!h5_exists(f, obj))
		return ss_err_set(e, "%s:%s: missing object", f->name, obj);
	htri_t ex = H5Aexists_by_name(f->fid, obj, name, H5P_DEFAULT);
	if (ex <= 0) {
		H5Eclear2(H5E_DEFAULT);
		return ss_err_set(e, "%s:%s: missing attribute '%s'", f->name, obj, name);
	}
	h->a = H5Aopen_by_name(f->fid, obj, name, H5P_DEFAULT, H5P_DEFAULT);
	if (h->a < 0)
		return h5i_fail(e, f, obj, "cannot open attribute");
	h->t = H5Aget_type(h->a);
	h->sp = H5Aget_space(h->a);
	return 0;
}

int h5_get_attr_ints(ss_h5 *f, const char *obj, const char *name, size_t *n, long **v,
                     ss_err *e)
{
	*v = NULL;
	*n = 0;
	attr_h h;
	int rc = -1;
	if (attr_open(f, obj, name, &h, e))
		goto done;
	if (h.t < 0 || H5Tget_class(h.t) != H5T_INTEGER) {
		ss_err_set(e, "%s:%s: attribute '%s' is not an integer", f->name, obj, name);
		goto done;
	}
	hssize_t cnt = h.sp >= 0 ? H5Sget_simple_extent_npoints(h.sp) : -1;
	if (cnt < 0) {
		h5i_fail(e, f, obj, "cannot read attribute space");
		goto done;
	}
	long *buf = ss_malloc(cnt ? (size_t)cnt : 1, sizeof(long), name, e);
	if (!buf)
		goto done;
	if (cnt && H5Aread(h.a, H5T_NATIVE_LONG, buf) < 0) {
		free(buf);
		ss_err_set(e, "%s:%s: attribute '%s': cannot read as an integer (%s)", f->name, obj,
		           name, h5i_msg());
		goto done;
	}
	*v = buf;
	*n = (size_t)cnt;
	rc = 0;
done:
	attr_close(&h);
	return rc;
}

int h5_get_attr_int(ss_h5 *f, const char *obj, const char *name, long *v, ss_err *e)
{
	size_t n;
	long *buf;
	if (h5_get_attr_ints(f, obj, name, &n, &buf, e))
		return -1;
	if (n != 1) {
		free(buf);
		return ss_err_set(e, "%s:%s: attribute '%s' has %zu values, expected 1", f->name, obj,
		                  name, n);
	}
	*v = buf[0];
	free(buf);
	return 0;
}

int h5_get_attr_str(ss_h5 *f, const char *obj, const char *name, char **v, ss_err *e)
{
	*v = NULL;
	attr_h h;
	hid_t mt = -1;
	int rc = -1;
	if (attr_open(f, obj, name, &h, e))
		goto done;
	if (h.t < 0 || H5Tget_class(h.t) != H5T_STRING || h.sp < 0 ||
	    H5Sget_simple_extent_npoints(h.sp) != 1) {
		ss_err_set(e, "%s:%s: attribute '%s' is not a string", f->name, obj, name);
		goto done;
	}
	int var = H5Tis_variable_str(h.t) > 0;
	mt = h5i_str_memtype(h.t, var);
	/* variable length: HDF5 allocates; fixed: a NUL-terminated copy */
	char *raw = var ? NULL : ss_calloc(H5Tget_size(h.t) + 1, 1, name, e);
	if (!var && !raw)
		goto done;
	if (H5Aread(h.a, mt, var ? (void *)&raw : raw) < 0) {
		if (!var)
			free(raw);
		h5i_fail(e, f, obj, "cannot read string attribute");
		goto done;
	}
	if (var) {
		*v = ss_strdup(raw ? raw : "", e);
		H5Dvlen_reclaim(mt, h.sp, H5P_DEFAULT, &raw);
	} else {
		*v = raw;
	}
	rc = *v ? 0 : -1;
done:
	h5i_close_id(mt);
	attr_close(&h);
	return rc;
}

/* Delete attribute `name` of obj when there is one, to create it anew. */
static void drop_attr(ss_h5 *f, const char *obj, const char *name)
{
	if (H5Aexists_by_name(f->fid, obj, name, H5P_DEFAULT) > 0)
		H5Adelete_by_name(f->fid, obj, name, H5P_DEFAULT);
}

/* Create (or replace) attribute `name` on obj and write it. */
static int put_attr(ss_h5 *f, const char *obj, const char *name, hid_t ftype, hid_t mtype,
                    int rank, hsize_t n, const void *data, ss_err *e)
{
	int rc = -1;
	hid_t sp = -1, a = -1;
	drop_attr(f, obj, name);
	H5Eclear2(H5E_DEFAULT);
	sp = rank ? H5Screate_simple(1, &n, NULL) : H5Screate(H5S_SCALAR);
	if (sp < 0) {
		h5i_fail(e, f, obj, "cannot create attribute space");
		goto done;
	}
	a = H5Acreate_by_name(f->fid, obj, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	if (a < 0) {
		ss_err_set(e, "%s:%s: cannot create attribute '%s' (%s)", f->name, obj, name, h5i_msg());
		goto done;
	}
	if (H5Awrite(a, mtype, data) < 0) {
		ss_err_set(e, "%s:%s: cannot write attribute '%s' (%s)", f->name, obj, name, h5i_msg());
		goto done;
	}
	rc = 0;
done:
	h5i_close_id(a);
	h5i_close_id(sp);
	return rc;
}

int h5_set_attr_int(ss_h5 *f, const char *obj, const char *name, long v, ss_err *e)
{
	int64_t x = v;
	return put_attr(f, obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, 0, 1, &x, e);
}

int h5_set_attr_ints(ss_h5 *f, const char *obj, const char *name, size_t n, const long *v,
                     ss_err *e)
{
	return put_attr(f, obj, name, H5T_STD_I64LE, H5T_NATIVE_LONG, 1, n, v, e);
}

int h5_set_attr_f64(ss_h5 *f, const char *obj, const char *name, double v, ss_err *e)
{
	return put_attr(f, obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, 1, &v, e);
}

int h5_set_attr_str(ss_h5 *f, const char *obj, const char *name, const char *v, ss_err *e)
{
	hid_t t = h5i_vlen_utf8();
	if (t < 0)
		return h5i_fail(e, f, obj, "cannot make string type");
	int rc = put_attr(f, obj, name, t, t, 0, 1, &v, e);
	H5Tclose(t);
	return rc;
}

/* ---- listing and copying attributes --------------------------------- */

struct list_ctx { char **names; size_t n, cap; int failed; };

static herr_t list_cb(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
	struct list_ctx *c = data;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;
		char **nn = realloc(c->names, cap * sizeof *nn);
		if (!nn) {
			c->failed = 1;
			return -1;
		}
		c->names = nn;
		c->cap = cap;
	}
	if (!(c->names[c->n] = strdup(name))) {
		c->failed = 1;
		return -1;
	}
	c->n++;
	return 0;
}

int h5_list(ss_h5 *f, const char *group, char ***names, size_t *n, ss_err *e)
{
	*names = NULL;
	*n = 0;
	if (!h5_exists(f, group))
		return ss_err_set(e, "%s:%s: missing group", f->name, group);
	hid_t g = H5Gopen2(f->fid, group, H5P_DEFAULT);
	if (g < 0)
		return h5i_fail(e, f, group, "not a group");
	struct list_ctx c = {0};
	hsize_t idx = 0;
	herr_t r = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, list_cb, &c);
	H5Gclose(g);
	if (r < 0 || c.failed) {
		h5_free_strings(c.names, c.n);
		return c.failed ? ss_err_set(e, "%s:%s: out of memory", f->name, group)
		                : h5i_fail(e, f, group, "cannot list");
	}
	*names = c.names;
	*n = c.n;
	return 0;
}

struct copy_ctx {
	ss_h5 *src, *dst;
	const char *obj;
	ss_err *e;
	int failed;
};

static herr_t copy_attr(hid_t loc, const char *name, const H5A_info_t *info, void *data)
{
	struct copy_ctx *c = data;
	hid_t a = H5Aopen(loc, name, H5P_DEFAULT), t = -1, sp = -1, b = -1;
	void *buf = NULL;
	int ok = 0, got = 0;
	if (a < 0)
		goto done;
	t = H5Aget_type(a);
	sp = H5Aget_space(a);
	hssize_t n = H5Sget_simple_extent_npoints(sp);
	size_t sz = H5Tget_size(t);
	buf = calloc(n > 0 ? (size_t)n : 1, sz ? sz : 1);
	if (!buf || H5Aread(a, t, buf) < 0)
		goto done;
	got = 1;
	drop_attr(c->dst, c->obj, name);
	b = H5Acreate_by_name(c->dst->fid, c->obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT,
	                      H5P_DEFAULT);
	if (b < 0 || H5Awrite(b, t, buf) < 0)
		goto done;
	ok = 1;
done:
	if (got && (H5Tis_variable_str(t) > 0 || H5Tdetect_class(t, H5T_VLEN) > 0))
		H5Dvlen_reclaim(t, sp, H5P_DEFAULT, buf);
	free(buf);
	h5i_close_id(b);
	h5i_close_id(sp);
	h5i_close_id(t);
	h5i_close_id(a);
	if (!ok) {
		ss_err_set(c->e, "%s:%s: cannot copy attribute '%s' (%s)", c->dst->name, c->obj, name,
		           h5i_msg());
		c->failed = 1;
		return -1;
	}
	return 0;
}

int h5_copy_attrs(ss_h5 *dst, ss_h5 *src, const char *obj, ss_err *e)
{
	struct copy_ctx c = {src, dst, obj, e, 0};
	hid_t o = H5Oopen(src->fid, obj, H5P_DEFAULT);
	if (o < 0)
		return h5i_fail(e, src, obj, "cannot open");
	hsize_t idx = 0;
	H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, &idx, copy_attr, &c);
	H5Oclose(o);
	H5Eclear2(H5E_DEFAULT);
	return c.failed ? -1 : 0;
}
