/* h5io.c - HDF5 I/O; see h5io.h.  The only file that includes hdf5.h.
 *
 * Every hid_t starts at -1 and is closed at one `done:` label; HDF5's own
 * error printing is off and its innermost message is folded into ours.
 */
#include "io/h5io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "util/ofile.h"

typedef struct { void *buf; size_t len; } img_udata; /* see open_image */

struct ss_h5 {
	hid_t fid;
	char *name;      /* for messages */
	int writing;
	int to_stdout;   /* created with "-" or a device, FIFO or socket (ofile.h):
	                  * an in-memory file whose image goes to out_fd at commit */
	int out_fd;      /* 1 for stdout, else the stream's descriptor */
	char *path;      /* final path of a created real file */
	char *tmp;       /* its temporary name */
	struct ss_h5_buf *buf; /* the file's bytes, when held in memory */
	img_udata img_ud;      /* for HDF5's file-image callbacks, lives with fid */
	int map_failed;
};

/* The stdin image (HDF5 reads it in place: opened without a copy) or the
 * file mapped for borrowed views (h5_view_f32).  Reference counted: the
 * handle holds one reference, every h5_take_buffers() another. */
struct ss_h5_buf {
	int refs;
	void *image;
	size_t image_len;
	int image_mapped; /* stdin was a regular file, mapped rather than read */
	void *map;
	size_t map_len;
};

static void quiet(void)
{
	static int done;
	if (!done) {
		/* no library shutdown at exit: after a failed H5Fclose (full disk)
		 * HDF5 1.10's own atexit cleanup crashes on the half-closed file */
		H5dont_atexit();
		H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
		done = 1;
	}
}

/* The innermost (most specific) description on HDF5's error stack, or,
 * when one entry carries the system error (the file driver's "errno = 28,
 * error message = 'No space left on device'"), that one. */
typedef struct walk_buf { char first[1024], sys[1024]; } walk_buf;

static herr_t walk_cb(unsigned n, const H5E_error2_t *err, void *data)
{
	walk_buf *b = data;
	if (n == 0 && err->desc)
		snprintf(b->first, sizeof b->first, "%s", err->desc);
	if (!b->sys[0] && err->desc && strstr(err->desc, "errno ="))
		snprintf(b->sys, sizeof b->sys, "%s", err->desc);
	return 0;
}

static const char *h5msg(void)
{
	static char buf[1024];
	walk_buf b;
	b.first[0] = b.sys[0] = '\0';
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, &b);
	H5Eclear2(H5E_DEFAULT);
	snprintf(buf, sizeof buf, "%s", b.sys[0] ? b.sys : b.first);
	/* A failed system call: keep only the system's words, e.g.
	 * "file write failed: time = ..., errno = 28, error message = 'No space
	 * left on device', ..." -> "No space left on device". */
	char *m = strstr(buf, "error message = '");
	if (m) {
		m += strlen("error message = '");
		char *q = strchr(m, '\'');
		if (q)
			*q = '\0';
		memmove(buf, m, strlen(m) + 1);
	}
	return buf;
}

/* Seen through "FILE:PATH: what (HDF5: detail)". */
static int h5fail(ss_err *e, const ss_h5 *f, const char *path, const char *what)
{
	const char *m = h5msg();
	if (!*m)
		return ss_err_set(e, "%s:%s: %s", f->name, path, what);
	return ss_err_set(e, "%s:%s: %s (HDF5: %s)", f->name, path, what, m);
}

/* Close an open id of any kind used here; -1 (not opened) is ignored, so
 * every done: label is a plain list of the ids. */
static void close_id(hid_t id)
{
	if (id < 0)
		return;
	switch (H5Iget_type(id)) {
	case H5I_DATASET: H5Dclose(id); break;
	case H5I_DATATYPE: H5Tclose(id); break;
	case H5I_DATASPACE: H5Sclose(id); break;
	case H5I_GENPROP_LST: H5Pclose(id); break;
	case H5I_ATTR: H5Aclose(id); break;
	case H5I_GROUP: H5Gclose(id); break;
	default: H5Idec_ref(id); break;
	}
}

const char *h5_name(const ss_h5 *f) { return f->name; }

static ss_h5 *new_h5(const char *name, ss_err *e)
{
	ss_h5 *f = ss_calloc(1, sizeof *f, "HDF5 handle", e);
	if (!f)
		return NULL;
	f->fid = -1;
	f->name = ss_strdup(name, e);
	if (!f->name) {
		free(f);
		return NULL;
	}
	return f;
}

static void free_h5(ss_h5 *f)
{
	if (!f)
		return;
	free(f->name);
	free(f->path);
	free(f->tmp);
	h5_buffers_free(f->buf);
	free(f);
}

/* Read all of stdin into memory. */
static int slurp_stdin(void **buf, size_t *len, ss_err *e)
{
	size_t cap = 1 << 20, n = 0;
	char *b = malloc(cap);
	if (!b)
		return ss_err_set(e, "<stdin>: out of memory");
	for (;;) {
		if (n == cap) {
			if (cap > SIZE_MAX / 2) {
				free(b);
				return ss_err_set(e, "<stdin>: input too large");
			}
			char *nb = realloc(b, cap * 2);
			if (!nb) {
				free(b);
				return ss_err_set(e, "<stdin>: out of memory reading %zu bytes", cap * 2);
			}
			b = nb;
			cap *= 2;
		}
		ssize_t r = read(0, b + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int err = errno;
			free(b);
			return ss_err_errno(e, err, "<stdin>: read error");
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*buf = b;
	*len = n;
	return 0;
}

/* File-image callbacks that let HDF5 read our buffer in place: every
 * "allocation" is the buffer itself, copies onto itself are no-ops, frees
 * do nothing (the buffer is ours).  Read-only, so nothing ever grows.
 * (H5LTopen_file_image does the same but leaks when the open fails.) */
static void *img_malloc(size_t size, H5FD_file_image_op_t op, void *ud)
{
	img_udata *u = ud;
	return size <= u->len ? u->buf : NULL;
}
static void *img_memcpy(void *dest, const void *src, size_t size, H5FD_file_image_op_t op,
                        void *ud)
{
	if (dest != src)
		memmove(dest, src, size);
	return dest;
}
static void *img_realloc(void *ptr, size_t size, H5FD_file_image_op_t op, void *ud)
{
	return NULL;
}
static herr_t img_free(void *ptr, H5FD_file_image_op_t op, void *ud) { return 0; }
static void *img_udata_copy(void *ud) { return ud; }
static herr_t img_udata_free(void *ud) { return 0; }

/* A name for an in-memory file: it only has to be unique among open files. */
static void mem_name(char *nm, size_t cap, const char *base)
{
	static unsigned seq;
	snprintf(nm, cap, "%s.%d.%u", base, (int)getpid(), seq++);
}

/* Map a regular, non-empty file privately (copy on write); NULL if not. */
static void *map_private(int fd, size_t *len)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
		return NULL;
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		return NULL;
	*len = (size_t)st.st_size;
	return m;
}

static hid_t open_image(void *buf, size_t len, img_udata *u)
{
	u->buf = buf;
	u->len = len;
	H5FD_file_image_callbacks_t cb = {img_malloc, img_memcpy, img_realloc, img_free,
	                                  img_udata_copy, img_udata_free, u};
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fid = -1;
	if (fapl >= 0 && H5Pset_fapl_core(fapl, 1 << 20, 0) >= 0 &&
	    H5Pset_file_image_callbacks(fapl, &cb) >= 0 && H5Pset_file_image(fapl, buf, len) >= 0) {
		char nm[64];
		mem_name(nm, sizeof nm, "<stdin>");
		fid = H5Fopen(nm, H5F_ACC_RDONLY, fapl);
	}
	close_id(fapl);
	return fid;
}

static const unsigned char h5_signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

/* The stdin image: stdin mapped when it is a regular file, else read. */
static int open_stdin(ss_h5 *f, ss_err *e)
{
	size_t len = 0;
	void *img = NULL;
	f->buf = ss_calloc(1, sizeof *f->buf, "file image", e);
	if (!f->buf)
		return -1;
	f->buf->refs = 1;
	if (lseek(0, 0, SEEK_CUR) == 0 && (img = map_private(0, &len)))
		f->buf->image_mapped = 1;
	if (!img && slurp_stdin(&img, &len, e))
		return -1;
	f->buf->image = img;
	f->buf->image_len = len;
	if (len == 0)
		return ss_err_set(e, "<stdin>: empty input, expected an HDF5 file image");
	if (len < 8 || memcmp(img, h5_signature, 8))
		return ss_err_set(e, "<stdin>: not an HDF5 file (no HDF5 signature)");
	/* The buffer stays ours (freed in h5_close); HDF5 neither copies nor frees it. */
	f->fid = open_image(img, len, &f->img_ud);
	if (f->fid < 0)
		return h5fail(e, f, "/", "cannot open HDF5 image (truncated or corrupt?)");
	return 0;
}

static int open_file(ss_h5 *f, const char *path, ss_err *e)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return ss_err_set(e, "%s: is a directory, expected an HDF5 file", path);
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return ss_err_errno(e, errno, "%s", path);
	unsigned char sig[8];
	size_t got = fread(sig, 1, 8, fp);
	fclose(fp);
	if (got == 0)
		return ss_err_set(e, "%s: empty file, expected HDF5", path);
	/* HDF5 also looks for a signature at 512, 1024 ... (user block);
	 * let it decide when the first bytes are not the signature. */
	if (H5Fis_hdf5(path) <= 0) {
		H5Eclear2(H5E_DEFAULT);
		return ss_err_set(e, "%s: not an HDF5 file", path);
	}
	f->fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (f->fid < 0)
		return h5fail(e, f, "/", "cannot open (truncated or corrupt?)");
	return 0;
}

int h5_open(ss_h5 **out, const char *path, ss_err *e)
{
	quiet();
	*out = NULL;
	int in = !strcmp(path, "-");
	ss_h5 *f = new_h5(in ? "<stdin>" : path, e);
	if (!f)
		return -1;
	if (in ? open_stdin(f, e) : open_file(f, path, e)) {
		free_h5(f);
		return -1;
	}
	*out = f;
	return 0;
}

int h5_create(ss_h5 **out, const char *path, ss_err *e)
{
	quiet();
	*out = NULL;
	ss_out_kind kind;
	char *real;
	if (ss_out_resolve(path, &kind, &real, e))
		return -1;
	ss_h5 *f = new_h5(kind == SS_OUT_STDOUT ? "<stdout>" : path, e);
	if (!f) {
		free(real);
		return -1;
	}
	f->writing = 1;
	f->path = real;
	hid_t fapl = -1;
	if (kind != SS_OUT_FILE) {
		f->to_stdout = 1;
		f->out_fd = 1;
		if (kind == SS_OUT_STREAM && ss_out_stream_open(real, &f->out_fd, e))
			goto fail;
		fapl = H5Pcreate(H5P_FILE_ACCESS);
		if (fapl < 0 || H5Pset_fapl_core(fapl, 1 << 20, 0) < 0) {
			h5fail(e, f, "/", "cannot set up the in-memory file");
			goto fail;
		}
		char nm[64];
		mem_name(nm, sizeof nm, "<stdout>");
		f->fid = H5Fcreate(nm, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
		if (f->fid < 0) {
			h5fail(e, f, "/", "cannot create the in-memory file");
			goto fail;
		}
		H5Pclose(fapl);
	} else {
		int fd = -1;
		if (ss_tmp_create(real, &f->tmp, &fd, e))
			goto fail;
		close(fd);
		f->fid = H5Fcreate(f->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
		if (f->fid < 0) {
			h5fail(e, f, "/", "cannot create");
			goto fail;
		}
	}
	*out = f;
	return 0;
fail:
	close_id(fapl);
	h5_close(f);
	return -1;
}

int h5_commit(ss_h5 *f, ss_err *e)
{
	int rc = -1;
	char *img = NULL;
	if (!f->writing) {
		ss_err_set(e, "%s: not opened for writing", f->name);
		goto done;
	}
	if (f->to_stdout) {
		if (H5Fflush(f->fid, H5F_SCOPE_GLOBAL) < 0) {
			h5fail(e, f, "/", "cannot flush");
			goto done;
		}
		ssize_t n = H5Fget_file_image(f->fid, NULL, 0);
		if (n < 0) {
			h5fail(e, f, "/", "cannot get the file image");
			goto done;
		}
		img = malloc((size_t)n ? (size_t)n : 1);
		if (!img) {
			ss_err_set(e, "%s: out of memory for a %zd-byte image", f->name, n);
			goto done;
		}
		if (H5Fget_file_image(f->fid, img, (size_t)n) < 0) {
			h5fail(e, f, "/", "cannot get the file image");
			goto done;
		}
		H5Fclose(f->fid);
		f->fid = -1;
		/* stdio may hold buffered bytes for stdout; keep the order. */
		if (f->out_fd == 1 && fflush(stdout) != 0) {
			ss_err_errno(e, errno, "<stdout>: write error");
			goto done;
		}
		if (ss_write_all(f->out_fd, img, (size_t)n, f->name, e))
			goto done;
		if (f->out_fd != 1) {
			int c = close(f->out_fd);
			f->out_fd = -1;
			if (c != 0) {
				ss_err_errno(e, errno, "%s: write error", f->name);
				goto done;
			}
		}
		rc = 0;
	} else {
		herr_t s = H5Fclose(f->fid);
		f->fid = -1;
		if (s < 0) {
			h5fail(e, f, "/", "cannot close (disk full?)");
			goto done;
		}
		if (ss_fsync_path(f->tmp, f->name, e))
			goto done;
		if (rename(f->tmp, f->path) != 0) {
			ss_err_errno(e, errno, "%s: cannot rename into place", f->name);
			goto done;
		}
		ss_tmp_unregister(f->tmp);
		free(f->tmp);
		f->tmp = NULL;
		rc = 0;
	}
done:
	free(img);
	h5_close(f);
	return rc;
}

void h5_close(ss_h5 *f)
{
	if (!f)
		return;
	if (f->fid >= 0)
		H5Fclose(f->fid);
	H5Eclear2(H5E_DEFAULT);
	if (f->to_stdout && f->out_fd > 1)
		close(f->out_fd);
	if (f->tmp) {
		unlink(f->tmp);
		ss_tmp_unregister(f->tmp);
	}
	free_h5(f);
}

/* ---- objects ---------------------------------------------------------- */

int h5_exists(ss_h5 *f, const char *path)
{
	if (!strcmp(path, "/"))
		return 1;
	char buf[1024];
	size_t n = strlen(path);
	if (n >= sizeof buf)
		return 0;
	memcpy(buf, path, n + 1);
	/* H5Lexists needs every intermediate link to exist: check each prefix. */
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] == '/' || buf[i] == '\0') {
			char c = buf[i];
			buf[i] = '\0';
			htri_t r = H5Lexists(f->fid, buf, H5P_DEFAULT);
			if (r > 0)
				r = H5Oexists_by_name(f->fid, buf, H5P_DEFAULT);
			buf[i] = c;
			if (r <= 0) {
				H5Eclear2(H5E_DEFAULT);
				return 0;
			}
		}
	}
	return 1;
}

static hid_t open_dset(ss_h5 *f, const char *path, ss_err *e)
{
	if (!h5_exists(f, path)) {
		ss_err_set(e, "%s:%s: missing dataset", f->name, path);
		return -1;
	}
	hid_t d = H5Dopen2(f->fid, path, H5P_DEFAULT);
	if (d < 0)
		h5fail(e, f, path, "not a dataset");
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
		return h5fail(e, f, path, "cannot get dataspace");
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
	close_id(t);
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
		h5fail(e, f, path, "read failed (truncated file?)");
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

/* The bytes of the file: the stdin image, or the file mapped privately
 * (copy on write, so a borrowed view may be modified like a read buffer). */
static const unsigned char *file_bytes(ss_h5 *f, size_t *len)
{
	if (f->buf && f->buf->image) {
		*len = f->buf->image_len;
		return f->buf->image;
	}
	if (f->writing || f->map_failed)
		return NULL;
	if (!f->buf) {
		f->map_failed = 1;
		int fd = open(f->name, O_RDONLY);
		if (fd < 0)
			return NULL;
		size_t n = 0;
		void *m = map_private(fd, &n);
		close(fd);
		if (!m)
			return NULL;
		f->buf = calloc(1, sizeof *f->buf);
		if (!f->buf) {
			munmap(m, n);
			return NULL;
		}
		f->buf->refs = 1;
		f->buf->map = m;
		f->buf->map_len = n;
		f->map_failed = 0;
	}
	*len = f->buf->map_len;
	return f->buf->map;
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
	close_id(t);
	close_id(pl);
	if (ok) {
		haddr_t off = H5Dget_offset(d);
		hsize_t sz = H5Dget_storage_size(d);
		if (off != HADDR_UNDEF && sz == (hsize_t)n * sizeof(float) && off % sizeof(float) == 0 &&
		    (base = file_bytes(f, &len)) && off <= len && sz <= len - off &&
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

ss_h5_buf *h5_take_buffers(ss_h5 *f)
{
	if (f->buf)
		f->buf->refs++;
	return f->buf;
}

void h5_buffers_free(ss_h5_buf *b)
{
	if (!b || --b->refs > 0)
		return;
	/* HDF5 was told neither to copy nor to free the image */
	if (b->image_mapped)
		munmap(b->image, b->image_len);
	else
		free(b->image);
	if (b->map)
		munmap(b->map, b->map_len);
	free(b);
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
		h5fail(e, f, path, "cannot select rows");
		goto fail;
	}
	if ((m = H5Screate_simple(r, cnt, NULL)) < 0) {
		h5fail(e, f, path, "cannot create memory space");
		goto fail;
	}
	*fsp = sp;
	*msp = m;
	return 0;
fail:
	close_id(sp);
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
		h5fail(e, f, path, "read failed (truncated file?)");
		goto done;
	}
	if (count && writing && H5Dwrite(d, H5T_NATIVE_FLOAT, msp, fsp, H5P_DEFAULT, wbuf) < 0) {
		h5fail(e, f, path, "write failed");
		goto done;
	}
	rc = 0;
done:
	close_id(msp);
	close_id(fsp);
	H5Dclose(d);
	return rc;
}

int h5_read_f32_rows(ss_h5 *f, const char *path, size_t start, size_t count, float *buf,
                     ss_err *e)
{
	return rows_io(f, path, start, count, 0, buf, NULL, e);
}

void h5_free_strings(char **strs, size_t n)
{
	if (!strs)
		return;
	for (size_t i = 0; i < n; i++)
		free(strs[i]);
	free(strs);
}

/* The memory type to read strings stored as ft: same character set,
 * variable length or ft's fixed width (NUL-padded). */
static hid_t str_memtype(hid_t ft, int var)
{
	hid_t mt = H5Tcopy(H5T_C_S1);
	H5Tset_cset(mt, H5Tget_cset(ft));
	if (var) {
		H5Tset_size(mt, H5T_VARIABLE);
	} else {
		H5Tset_size(mt, H5Tget_size(ft));
		H5Tset_strpad(mt, H5T_STR_NULLPAD);
	}
	return mt;
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
	mt = str_memtype(ft, var);
	/* variable length: an array of pointers; fixed: cnt strings of w bytes */
	raw = var ? ss_calloc(cnt ? cnt : 1, w, path, e) : ss_malloc(cnt ? cnt : 1, w, path, e);
	if (!raw)
		goto done;
	if (cnt && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw) < 0) {
		h5fail(e, f, path, "read failed");
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
	close_id(mt);
	close_id(sp);
	close_id(ft);
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
		h5fail(e, f, path, "cannot create dataspace");
	else if ((d = H5Dcreate2(f->fid, path, ftype, sp, lc, dcpl, H5P_DEFAULT)) < 0)
		h5fail(e, f, path, "cannot create dataset");
	close_id(lc);
	close_id(sp);
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
		rc = h5fail(e, f, path, "write failed");
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

static hid_t vlen_utf8(void)
{
	hid_t t = H5Tcopy(H5T_C_S1);
	if (t >= 0) {
		H5Tset_size(t, H5T_VARIABLE);
		H5Tset_cset(t, H5T_CSET_UTF8);
	}
	return t;
}

int h5_write_strings(ss_h5 *f, const char *path, size_t n, const char *const *strs, ss_err *e)
{
	hid_t t = vlen_utf8();
	if (t < 0)
		return h5fail(e, f, path, "cannot make string type");
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
		h5fail(e, f, path, "cannot set up a chunked dataset");
	else
		d = create_dset(f, path, H5T_IEEE_F32LE, rank, hd, dc, e);
	close_id(d);
	close_id(dc);
	return d < 0 ? -1 : 0;
}

int h5_write_f32_rows(ss_h5 *f, const char *path, size_t start, size_t count, const float *buf,
                      ss_err *e)
{
	return rows_io(f, path, start, count, 1, NULL, buf, e);
}

/* ---- attributes ------------------------------------------------------- */

/* An open attribute with its type and space (-1 where not open). */
typedef struct attr_h { hid_t a, t, sp; } attr_h;

static void attr_close(attr_h *h)
{
	close_id(h->sp);
	close_id(h->t);
	close_id(h->a);
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
		return h5fail(e, f, obj, "cannot open attribute");
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
		h5fail(e, f, obj, "cannot read attribute space");
		goto done;
	}
	long *buf = ss_malloc(cnt ? (size_t)cnt : 1, sizeof(long), name, e);
	if (!buf)
		goto done;
	if (cnt && H5Aread(h.a, H5T_NATIVE_LONG, buf) < 0) {
		free(buf);
		ss_err_set(e, "%s:%s: attribute '%s': cannot read as an integer (%s)", f->name, obj,
		           name, h5msg());
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
	mt = str_memtype(h.t, var);
	/* variable length: HDF5 allocates; fixed: a NUL-terminated copy */
	char *raw = var ? NULL : ss_calloc(H5Tget_size(h.t) + 1, 1, name, e);
	if (!var && !raw)
		goto done;
	if (H5Aread(h.a, mt, var ? (void *)&raw : raw) < 0) {
		if (!var)
			free(raw);
		h5fail(e, f, obj, "cannot read string attribute");
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
	close_id(mt);
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
		h5fail(e, f, obj, "cannot create attribute space");
		goto done;
	}
	a = H5Acreate_by_name(f->fid, obj, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	if (a < 0) {
		ss_err_set(e, "%s:%s: cannot create attribute '%s' (%s)", f->name, obj, name, h5msg());
		goto done;
	}
	if (H5Awrite(a, mtype, data) < 0) {
		ss_err_set(e, "%s:%s: cannot write attribute '%s' (%s)", f->name, obj, name, h5msg());
		goto done;
	}
	rc = 0;
done:
	close_id(a);
	close_id(sp);
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
	hid_t t = vlen_utf8();
	if (t < 0)
		return h5fail(e, f, obj, "cannot make string type");
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
		return h5fail(e, f, group, "not a group");
	struct list_ctx c = {0};
	hsize_t idx = 0;
	herr_t r = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, list_cb, &c);
	H5Gclose(g);
	if (r < 0 || c.failed) {
		h5_free_strings(c.names, c.n);
		return c.failed ? ss_err_set(e, "%s:%s: out of memory", f->name, group)
		                : h5fail(e, f, group, "cannot list");
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
	close_id(b);
	close_id(sp);
	close_id(t);
	close_id(a);
	if (!ok) {
		ss_err_set(c->e, "%s:%s: cannot copy attribute '%s' (%s)", c->dst->name, c->obj, name,
		           h5msg());
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
		return h5fail(e, src, obj, "cannot open");
	hsize_t idx = 0;
	H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, &idx, copy_attr, &c);
	H5Oclose(o);
	H5Eclear2(H5E_DEFAULT);
	return c.failed ? -1 : 0;
}
