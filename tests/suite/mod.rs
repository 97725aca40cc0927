mod cli_mcp;
mod pool;
mod serve;
