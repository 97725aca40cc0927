#include <stdio.h>
#include <stdlib.h>
#include "geometry.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: hypot A B\n");
        return 2;
    }
    printf("%g\n", hypotenuse(atof(argv[1]), atof(argv[2])));
    return 0;
}
