mod pool;
mod serve;
