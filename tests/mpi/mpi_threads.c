#include "mpi_common.h"
int main(int c, char **v){(void)c; mt_start(v[0],1); return mt_finish();}
