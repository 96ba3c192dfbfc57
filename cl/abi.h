/* abi.h: every layout that host and device share, defined once. */
#ifndef CLS_ABI_H
#define CLS_ABI_H
#endif
