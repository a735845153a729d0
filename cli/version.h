#ifndef MURMUR_VERSION_H
#define MURMUR_VERSION_H
#define MURMUR_VERSION "0.1.0"
#endif
