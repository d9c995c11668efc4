/* h5io_dset.c - HDF5 datasets; see h5io.h: shapes checked on read, whole
 * reads, borrowed views of native f32 data, strips of rows, strings, whole
 * and chunked writes.
 */
#include "io/h5io.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/h5io_int.h"

static hid_t open_dset(ss_h5 *f, const char *path, ss_err *e)
{
	if (!h5_exists(f, path)) {
		ss_err_set(e, "%s:%s: missing dataset", f->name, path);
		return -1;
	}
	hid_t d = H5Dopen2(f->fid, path, H5P_DEFAULT);
	if (d < 0)
		h5i_fail(e, f, path, "not a dataset");
	return d;
}

static void fmt_dims(char *buf, size_t cap, int rank, const size_t *dims, int zero_is_any)
{
	size_t o = 0;
	buf[0] = '\0';
	for (int i = 0; i < rank && o < cap; i++) {
		if (zero_is_any && !dims[i])
			o += (size_t)snprintf(buf + o, cap - o, "%s*", i ? "x" : "");
		else
			o += (size_t)snprintf(buf + o, cap - o, "%s%zu", i ? "x" : "", dims[i]);
	}
	if (rank == 0)
		snprintf(buf, cap, "scalar");
}

static int dset_shape(ss_h5 *f, const char *path, hid_t d, int *rank, size_t *dims, ss_err *e)
{
	hid_t sp = H5Dget_space(d);
	if (sp < 0)
		return h5i_fail(e, f, path, "cannot get dataspace");
	int r = H5Sget_simple_extent_ndims(sp);
	if (r < 0 || r > H5IO_MAX_RANK) {
		H5Sclose(sp);
		return ss_err_set(e, "%s:%s: unsupported rank %d", f->name, path, r);
	}
	hsize_t hd[H5IO_MAX_RANK];
	H5Sget_simple_extent_dims(sp, hd, NULL);
	H5Sclose(sp);
	for (int i = 0; i < r; i++)
		dims[i] = (size_t)hd[i];
	*rank = r;
	return 0;
}

int h5_shape(ss_h5 *f, const char *path, int *rank, size_t dims[H5IO_MAX_RANK], ss_err *e)
{
	hid_t d = open_dset(f, path, e);
	if (d < 0)
		return -1;
	int rc = dset_shape(f, path, d, rank, dims, e);
	H5Dclose(d);
	return rc;
}

/* The stored type of d must be of class cls: "stored type is not ...". */
static int check_class(ss_h5 *f, const char *path, hid_t d, H5T_class_t cls, ss_err *e)
{
	hid_t t = H5Dget_type(d);
	H5T_class_t c = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
	h5i_close_id(t);
	if (c == cls)
		return 0;
	const char *want = cls == H5T_FLOAT ? "floating point" : cls == H5T_INTEGER ? "integer"
	                                                                             : "a string";
	return ss_err_set(e, "%s:%s: stored type is not %s", f->name, path, want);
}

/* d must have rank `rank` and each nonzero expect[i]; *count gets the
 * element count, dims (may be NULL) the shape. */
static int check_shape(ss_h5 *f, const char *path, hid_t d, int rank, const size_t *expect,
                       size_t *dims, size_t *count, ss_err *e)
{
	int r;
	size_t dd[H5IO_MAX_RANK];
	if (dset_shape(f, path, d, &r, dd, e))
		return -1;
	int bad = r != rank;
	for (int i = 0; !bad && i < rank && expect; i++)
		if (expect[i] && expect[i] != dd[i])
			bad = 1;
	if (bad) {
		char got[128], want[128];
		fmt_dims(got, sizeof got, r, dd, 0);
		if (expect)
			fmt_dims(want, sizeof want, rank, expect, 1);
		else
			snprintf(want, sizeof want, "rank %d", rank);
		if (r != rank && !expect)
			return ss_err_set(e, "%s:%s: shape %s, expected rank %d", f->name, path, got,
			                  rank);
		return ss_err_set(e, "%s:%s: shape %s, expected %s", f->name, path, got, want);
	}
	size_t n = 1;
	for (int i = 0; i < r; i++) {
		if (dd[i] && n > SIZE_MAX / dd[i])
			return ss_err_set(e, "%s:%s: dataset too large", f->name, path);
		n *= dd[i];
		if (dims)
			dims[i] = dd[i];
	}
	*count = n;
	return 0;
}

/* Open, check class, rank and expected shape; returns the element count. */
static hid_t open_checked(ss_h5 *f, const char *path, H5T_class_t cls, int rank,
                          const size_t *expect, size_t *dims, size_t *count, ss_err *e)
{
	hid_t d = open_dset(f, path, e);
	if (d < 0)
		return -1;
	if (check_class(f, path, d, cls, e) ||
	    check_shape(f, path, d, rank, expect, dims, count, e)) {
		H5Dclose(d);
		return -1;
	}
	return d;
}

static int read_whole(ss_h5 *f, const char *path, H5T_class_t cls, hid_t mtype, size_t esz,
                      int rank, const size_t *expect, void **data, size_t *dims, ss_err *e)
{
	*data = NULL;
	size_t n;
	hid_t d = open_checked(f, path, cls, rank, expect, dims, &n, e);
	if (d < 0)
		return -1;
	void *buf = ss_malloc(n ? n : 1, esz, path, e);
	if (!buf) {
		H5Dclose(d);
		return ss_err_prefix(e, "%s", f->name);
	}
	if (n && H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
		h5i_fail(e, f, path, "read failed (truncated file?)");
		free(buf);
		H5Dclose(d);
		return -1;
	}
	H5Dclose(d);
	*data = buf;
	return 0;
}

int h5_read_f32(ss_h5 *f, const char *path, int rank, const size_t *expect, float **data,
                size_t *dims, ss_err *e)
{
	return read_whole(f, path, H5T_FLOAT, H5T_NATIVE_FLOAT, sizeof(float), rank, expect,
	                  (void **)data, dims, e);
}

int h5_view_f32(ss_h5 *f, const char *path, int rank, const size_t *expect, float **data,
                size_t *dims, int *borrowed, ss_err *e)
{
	*data = NULL;
	*borrowed = 0;
	size_t n;
	hid_t d = open_checked(f, path, H5T_FLOAT, rank, expect, dims, &n, e);
	if (d < 0)
		return -1;
	/* Borrow when the data lie in the file as native floats: a contiguous,
	 * allocated, little-endian f32 dataset at an aligned offset. */
	const unsigned char *base;
	size_t len = 0;
	hid_t t = H5Dget_type(d), pl = H5Dget_create_plist(d);
	int ok = t >= 0 && pl >= 0 && H5Tequal(t, H5T_NATIVE_FLOAT) > 0 &&
	         H5Tequal(t, H5T_IEEE_F32LE) > 0 && H5Pget_layout(pl) == H5D_CONTIGUOUS && n > 0;
	h5i_close_id(t);
	h5i_close_id(pl);
	if (ok) {
		haddr_t off = H5Dget_offset(d);
		hsize_t sz = H5Dget_storage_size(d);
		if (off != HADDR_UNDEF && sz == (hsize_t)n * sizeof(float) && off % sizeof(float) == 0 &&
		    (base = h5i_file_bytes(f, &len)) && off <= len && sz <= len - off &&
		    ((uintptr_t)(base + off)) % sizeof(float) == 0) {
			*data = (float *)(void *)(base + off);
			*borrowed = 1;
			H5Dclose(d);
			H5Eclear2(H5E_DEFAULT);
			return 0;
		}
	}
	H5Eclear2(H5E_DEFAULT);
	H5Dclose(d);
	return h5_read_f32(f, path, rank, expect, data, dims, e);
}

int h5_read_i32(ss_h5 *f, const char *path, int rank, const size_t *expect, int32_t **data,
                size_t *dims, ss_err *e)
{
	return read_whole(f, path, H5T_INTEGER, H5T_NATIVE_INT32, sizeof(int32_t), rank, expect,
	                  (void **)data, dims, e);
}

/* Select rows [start, start+count) of the first dimension of d's space. */
static int row_spaces(ss_h5 *f, const char *path, hid_t d, size_t start, size_t count,
                      hid_t *fsp, hid_t *msp, ss_err *e)
{
	*fsp = *msp = -1;
	hid_t sp = H5Dget_space(d), m = -1;
	int r = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
	if (r < 1 || r > H5IO_MAX_RANK) {
		ss_err_set(e, "%s:%s: expected an array", f->name, path);
		goto fail;
	}
	hsize_t dims[H5IO_MAX_RANK], off[H5IO_MAX_RANK] = {0}, cnt[H5IO_MAX_RANK];
	H5Sget_simple_extent_dims(sp, dims, NULL);
	if (start > dims[0] || count > dims[0] - start) {
		ss_err_set(e, "%s:%s: rows %zu..%zu out of range (%llu rows)", f->name, path, start,
		           start + count, (unsigned long long)dims[0]);
		goto fail;
	}
	for (int i = 0; i < r; i++)
		cnt[i] = dims[i];
	off[0] = start;
	cnt[0] = count;
	if (H5Sselect_hyperslab(sp, H5S_SELECT_SET, off, NULL, cnt, NULL) < 0) {
		h5i_fail(e, f, path, "cannot select rows");
		goto fail;
	}
	if ((m = H5Screate_simple(r, cnt, NULL)) < 0) {
		h5i_fail(e, f, path, "cannot create memory space");
		goto fail;
	}
	*fsp = sp;
	*msp = m;
	return 0;
fail:
	h5i_close_id(sp);
	return -1;
}

/* Read rows [start, start+count) of a dataset as native floats into rbuf,
 * or (writing) write them from wbuf. */
static int rows_io(ss_h5 *f, const char *path, size_t start, size_t count, int writing,
                   float *rbuf, const float *wbuf, ss_err *e)
{
	hid_t d = open_dset(f, path, e), fsp = -1, msp = -1;
	int rc = -1;
	if (d < 0)
		return -1;
	if (!writing && check_class(f, path, d, H5T_FLOAT, e))
		goto done;
	if (row_spaces(f, path, d, start, count, &fsp, &msp, e))
		goto done;
	if (count && !writing && H5Dread(d, H5T_NATIVE_FLOAT, msp, fsp, H5P_DEFAULT, rbuf) < 0) {
		h5i_fail(e, f, path, "read failed (truncated file?)");
		goto done;
	}
	if (count && writing && H5Dwrite(d, H5T_NATIVE_FLOAT, msp, fsp, H5P_DEFAULT, wbuf) < 0) {
		h5i_fail(e, f, path, "write failed");
		goto done;
	}
	rc = 0;
done:
	h5i_close_id(msp);
	h5i_close_id(fsp);
	H5Dclose(d);
	return rc;
}

int h5_read_f32_rows(ss_h5 *f, const char *path, size_t start, size_t count, float *buf,
                     ss_err *e)
{
	return rows_io(f, path, start, count, 0, buf, NULL, e);
}

int h5_read_strings(ss_h5 *f, const char *path, size_t *n, char ***strs, ss_err *e)
{
	*strs = NULL;
	*n = 0;
	hid_t d = open_dset(f, path, e), ft = -1, mt = -1, sp = -1;
	int rc = -1;
	char **out = NULL, *raw = NULL;
	size_t cnt = 0;
	if (d < 0)
		return -1;
	if (check_class(f, path, d, H5T_STRING, e))
		goto done;
	int rank;
	size_t dims[H5IO_MAX_RANK];
	if (dset_shape(f, path, d, &rank, dims, e))
		goto done;
	if (rank != 1) {
		ss_err_set(e, "%s:%s: expected a 1-D array of strings, got rank %d", f->name, path, rank);
		goto done;
	}
	cnt = dims[0];
	out = ss_calloc(cnt ? cnt : 1, sizeof *out, path, e);
	if (!out)
		goto done;
	ft = H5Dget_type(d);
	sp = H5Dget_space(d);
	int var = H5Tis_variable_str(ft) > 0;
	size_t w = var ? sizeof(char *) : H5Tget_size(ft);
	mt = h5i_str_memtype(ft, var);
	/* variable length: an array of pointers; fixed: cnt strings of w bytes */
	raw = var ? ss_calloc(cnt ? cnt : 1, w, path, e) : ss_malloc(cnt ? cnt : 1, w, path, e);
	if (!raw)
		goto done;
	if (cnt && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw) < 0) {
		h5i_fail(e, f, path, "read failed");
		goto done;
	}
	int bad = 0;
	for (size_t i = 0; i < cnt && !bad; i++) {
		const char *si = var ? ((char **)(void *)raw)[i] : raw + i * w;
		out[i] = strndup(si ? si : "", var ? SIZE_MAX : w);
		if (!out[i])
			bad = 1;
	}
	if (var && cnt)
		H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, raw);
	if (bad) {
		ss_err_set(e, "%s:%s: out of memory", f->name, path);
		goto done;
	}
	*strs = out;
	*n = cnt;
	out = NULL;
	rc = 0;
done:
	free(raw);
	h5_free_strings(out, cnt);
	h5i_close_id(mt);
	h5i_close_id(sp);
	h5i_close_id(ft);
	H5Dclose(d);
	return rc;
}

/* ---- writing ---------------------------------------------------------- */

static hid_t lcpl_intermediate(void)
{
	hid_t p = H5Pcreate(H5P_LINK_CREATE);
	if (p >= 0)
		H5Pset_create_intermediate_group(p, 1);
	return p;
}

/* Create dataset path (and its groups) of rank dims and type ftype with
 * creation properties dcpl. */
static hid_t create_dset(ss_h5 *f, const char *path, hid_t ftype, int rank,
                         const hsize_t *hd, hid_t dcpl, ss_err *e)
{
	hid_t sp = H5Screate_simple(rank, hd, NULL), lc = lcpl_intermediate(), d = -1;
	if (sp < 0 || lc < 0)
		h5i_fail(e, f, path, "cannot create dataspace");
	else if ((d = H5Dcreate2(f->fid, path, ftype, sp, lc, dcpl, H5P_DEFAULT)) < 0)
		h5i_fail(e, f, path, "cannot create dataset");
	h5i_close_id(lc);
	h5i_close_id(sp);
	return d;
}

static int write_whole(ss_h5 *f, const char *path, hid_t ftype, hid_t mtype, int rank,
                       const size_t *dims, const void *data, ss_err *e)
{
	if (rank < 0 || rank > H5IO_MAX_RANK)
		return ss_err_set(e, "%s:%s: unsupported rank %d", f->name, path, rank);
	hsize_t hd[H5IO_MAX_RANK] = {0};
	size_t n = 1;
	for (int i = 0; i < rank; i++) {
		hd[i] = dims[i];
		n *= dims[i];
	}
	hid_t d = create_dset(f, path, ftype, rank, hd, H5P_DEFAULT, e);
	if (d < 0)
		return -1;
	int rc = 0;
	if (n && H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
		rc = h5i_fail(e, f, path, "write failed");
	H5Dclose(d);
	return rc;
}

int h5_write_f32(ss_h5 *f, const char *path, int rank, const size_t *dims, const float *data,
                 ss_err *e)
{
	return write_whole(f, path, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, rank, dims, data, e);
}

int h5_write_i32(ss_h5 *f, const char *path, int rank, const size_t *dims, const int32_t *data,
                 ss_err *e)
{
	return write_whole(f, path, H5T_STD_I32LE, H5T_NATIVE_INT32, rank, dims, data, e);
}

int h5_write_f64(ss_h5 *f, const char *path, int rank, const size_t *dims, const double *data,
                 ss_err *e)
{
	return write_whole(f, path, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, rank, dims, data, e);
}

int h5_write_strings(ss_h5 *f, const char *path, size_t n, const char *const *strs, ss_err *e)
{
	hid_t t = h5i_vlen_utf8();
	if (t < 0)
		return h5i_fail(e, f, path, "cannot make string type");
	size_t dims[1] = {n};
	int rc = write_whole(f, path, t, t, 1, dims, strs, e);
	H5Tclose(t);
	return rc;
}

int h5_create_f32(ss_h5 *f, const char *path, int rank, const size_t *dims, ss_err *e)
{
	if (rank < 1 || rank > H5IO_MAX_RANK)
		return ss_err_set(e, "%s:%s: unsupported rank %d", f->name, path, rank);
	hsize_t hd[H5IO_MAX_RANK], ch[H5IO_MAX_RANK];
	for (int i = 0; i < rank; i++) {
		hd[i] = dims[i];
		ch[i] = dims[i] ? dims[i] : 1;
	}
	/* One chunk per index of the first dimension (a layer of /acts), split
	 * along the second when that would pass HDF5's 4 GiB chunk limit. */
	ch[0] = 1;
	for (;;) {
		double bytes = 4;
		for (int i = 1; i < rank; i++)
			bytes *= (double)ch[i];
		if (bytes <= (double)(1u << 30) || rank < 2 || ch[1] <= 1)
			break;
		ch[1] = (ch[1] + 1) / 2;
	}
	hid_t dc = H5Pcreate(H5P_DATASET_CREATE), d = -1;
	if (dc < 0 || H5Pset_chunk(dc, rank, ch) < 0)
		h5i_fail(e, f, path, "cannot set up a chunked dataset");
	else
		d = create_dset(f, path, H5T_IEEE_F32LE, rank, hd, dc, e);
	h5i_close_id(d);
	h5i_close_id(dc);
	return d < 0 ? -1 : 0;
}

int h5_write_f32_rows(ss_h5 *f, const char *path, size_t start, size_t count, const float *buf,
                      ss_err *e)
{
	return rows_io(f, path, start, count, 1, NULL, buf, e);
}
