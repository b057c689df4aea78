/* utils/fmgrprotos.h for the fuzz harnesses: nothing */
