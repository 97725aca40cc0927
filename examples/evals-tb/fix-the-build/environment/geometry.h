double hypotenuse(double a, double b);
