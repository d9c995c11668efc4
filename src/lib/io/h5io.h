/* h5io.h - HDF5 I/O (h5io.c files, h5io_dset.c datasets, h5io_attr.c
 * attributes).  The only module that includes hdf5.h.
 *
 * Paths: "-" for reading means a whole HDF5 file image on stdin (read into
 * memory and opened with the core driver, no temporary file); for writing
 * it means an in-memory file whose image goes to stdout at h5_commit().
 * Any other path follows ofile.h's policy for outputs: a new or regular
 * file (or a symlink's target) is written under a temporary name and
 * renamed into place by h5_commit(), so an error or a signal leaves no
 * partial output; a device, FIFO or socket gets the finished file image
 * at h5_commit(), as stdout does; a directory is an error.
 *
 * HDF5's automatic error printing is off: every failure comes back as one
 * line naming the file and the object, "run.h5:/stats/recv: ...".
 * Float datasets are read as f32 whatever their stored float type.
 */
#ifndef SS_H5IO_H
#define SS_H5IO_H

#include <stddef.h>
#include <stdint.h>
#include "util/err.h"

#define H5IO_MAX_RANK 8

typedef struct ss_h5 ss_h5;

int h5_open(ss_h5 **out, const char *path, ss_err *e);   /* read-only */
int h5_create(ss_h5 **out, const char *path, ss_err *e); /* new file */
/* Finish a created file: close it, rename it into place (or write the image
 * to stdout or the stream).  Frees f whether or not it succeeds. */
int h5_commit(ss_h5 *f, ss_err *e);
/* Close a file opened for reading, or abandon a created one (its temporary
 * file is removed).  NULL is fine. */
void h5_close(ss_h5 *f);
/* Name for messages: the path as given, or "<stdin>" / "<stdout>". */
const char *h5_name(const ss_h5 *f);

/* 1 when a dataset, group or attribute-bearing object exists at path. */
int h5_exists(ss_h5 *f, const char *path);
/* Rank and dims of a dataset; error when it is missing. */
int h5_shape(ss_h5 *f, const char *path, int *rank, size_t dims[H5IO_MAX_RANK], ss_err *e);

/* Read a whole numeric dataset.  `rank` is required; each expect[i] that is
 * nonzero must match (else "FILE:PATH: shape 24x14x512, expected 24x14x600").
 * Caller frees *data.  dims (may be NULL) receives the shape. */
int h5_read_f32(ss_h5 *f, const char *path, int rank, const size_t *expect, float **data,
                size_t *dims, ss_err *e);
int h5_read_i32(ss_h5 *f, const char *path, int rank, const size_t *expect, int32_t **data,
                size_t *dims, ss_err *e);
/* Like h5_read_f32, but when the dataset lies in the file as native
 * contiguous f32, *data points into the file's bytes (the stdin image, or
 * the file mapped copy-on-write) instead of a fresh buffer: *borrowed = 1,
 * and the bytes stay valid until h5_close(), or, after h5_take_buffers(),
 * until h5_buffers_free().  Else *borrowed = 0 and *data is malloc'd. */
int h5_view_f32(ss_h5 *f, const char *path, int rank, const size_t *expect, float **data,
                size_t *dims, int *borrowed, ss_err *e);
typedef struct ss_h5_buf ss_h5_buf;
/* Share the bytes behind borrowed views (reference counted; NULL when
 * there are none): they stay valid until both h5_close() and
 * h5_buffers_free() were called. */
ss_h5_buf *h5_take_buffers(ss_h5 *f);
void h5_buffers_free(ss_h5_buf *b);

/* Read `count` consecutive indices of the first dimension starting at
 * `start` into buf (count * product of the other dims floats): bounded
 * strips of large datasets. */
int h5_read_f32_rows(ss_h5 *f, const char *path, size_t start, size_t count, float *buf,
                     ss_err *e);
/* 1-D variable-length UTF-8 strings; *strs is an array of n malloc'd
 * NUL-terminated strings (free with h5_free_strings). */
int h5_read_strings(ss_h5 *f, const char *path, size_t *n, char ***strs, ss_err *e);
void h5_free_strings(char **strs, size_t n);

/* Write whole datasets; intermediate groups are created. */
int h5_write_f32(ss_h5 *f, const char *path, int rank, const size_t *dims, const float *data,
                 ss_err *e);
int h5_write_i32(ss_h5 *f, const char *path, int rank, const size_t *dims, const int32_t *data,
                 ss_err *e);
int h5_write_f64(ss_h5 *f, const char *path, int rank, const size_t *dims, const double *data,
                 ss_err *e);
int h5_write_strings(ss_h5 *f, const char *path, size_t n, const char *const *strs, ss_err *e);
/* Large datasets written in strips: create (chunked along the first
 * dimension), then write rows [start, start+count) of the first dimension. */
int h5_create_f32(ss_h5 *f, const char *path, int rank, const size_t *dims, ss_err *e);
int h5_write_f32_rows(ss_h5 *f, const char *path, size_t start, size_t count, const float *buf,
                      ss_err *e);

/* Attributes on an object ("/" is the root group).  Reading a missing
 * attribute is an error "FILE:/: missing attribute 'n_layers'". */
int h5_get_attr_int(ss_h5 *f, const char *obj, const char *name, long *v, ss_err *e);
int h5_get_attr_str(ss_h5 *f, const char *obj, const char *name, char **v, ss_err *e);
int h5_get_attr_ints(ss_h5 *f, const char *obj, const char *name, size_t *n, long **v,
                     ss_err *e);
int h5_set_attr_int(ss_h5 *f, const char *obj, const char *name, long v, ss_err *e);
int h5_set_attr_str(ss_h5 *f, const char *obj, const char *name, const char *v, ss_err *e);
int h5_set_attr_ints(ss_h5 *f, const char *obj, const char *name, size_t n, const long *v,
                     ss_err *e);
int h5_set_attr_f64(ss_h5 *f, const char *obj, const char *name, double v, ss_err *e);

/* Names of the links in a group (free with h5_free_strings). */
int h5_list(ss_h5 *f, const char *group, char ***names, size_t *n, ss_err *e);
/* Copy every attribute of obj in src to obj in dst (which must exist),
 * replacing those of the same name.  (Objects are copied by reading and
 * writing them: libhdf5 1.10's H5Ocopy crashes after a failed write.) */
int h5_copy_attrs(ss_h5 *dst, ss_h5 *src, const char *obj, ss_err *e);

#endif
