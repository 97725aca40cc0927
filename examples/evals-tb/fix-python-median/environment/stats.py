def median(values):
    """The middle value of `values` (the mean of the two middle ones for an even count)."""
    s = sorted(values)
    n = len(s)
    if n == 0:
        raise ValueError("median of nothing")
    if n % 2:
        return s[n // 2]
    return (s[n // 2] + s[n // 2 + 1]) / 2
