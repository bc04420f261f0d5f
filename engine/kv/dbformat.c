/*
 * dbformat.c -- internal-key helpers (see dbformat.h).
 */
#include "dbformat.h"

void ikey_append(struct buf *b, struct slice ukey, uint64_t seq, int type)
{
	buf_reserve(b, ukey.len + IKEY_TRAILER);
	buf_append(b, ukey.data, ukey.len);
	buf_put_fixed64(b, ikey_pack(seq, type));
}

int ikey_cmp_fn(struct slice a, struct slice b)
{
	return ikey_cmp(a, b);
}

int ukey_cmp_fn(struct slice a, struct slice b)
{
	return slice_cmp(a, b);
}

/*
 * Find the first differing byte of the user keys; if it can be incremented and
 * the result stays below limit, cut there and append the largest trailer, so
 * the separator sorts before every real version of the shortened key.
 */
void ikey_shortest_separator(struct buf *start, struct slice limit)
{
	struct slice us = ikey_user(buf_slice(start)), ul = ikey_user(limit);
	size_t n = us.len < ul.len ? us.len : ul.len, i = 0;

	while (i < n && us.data[i] == ul.data[i])
		i++;
	if (i >= n)
		return;  /* one is a prefix of the other */
	unsigned char c = (unsigned char)us.data[i];
	if (c == 0xff || c + 1 >= (unsigned char)ul.data[i])
		return;
	struct buf tmp = BUF_INIT;
	buf_append(&tmp, us.data, i + 1);
	tmp.data[i] = (char)(c + 1);
	buf_put_fixed64(&tmp, ikey_pack(SEQ_MAX, KT_SEEK));
	buf_set(start, tmp.data, tmp.len);
	buf_free(&tmp);
}

void ikey_short_successor(struct buf *key)
{
	struct slice u = ikey_user(buf_slice(key));

	for (size_t i = 0; i < u.len; i++) {
		unsigned char c = (unsigned char)u.data[i];
		if (c != 0xff) {
			struct buf tmp = BUF_INIT;
			buf_append(&tmp, u.data, i + 1);
			tmp.data[i] = (char)(c + 1);
			buf_put_fixed64(&tmp, ikey_pack(SEQ_MAX, KT_SEEK));
			buf_set(key, tmp.data, tmp.len);
			buf_free(&tmp);
			return;
		}
	}
}
