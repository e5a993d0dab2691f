

HANG_S = 1800  # seconds: a child process that takes longer is hung; not a deadline for a slow or busy machine
