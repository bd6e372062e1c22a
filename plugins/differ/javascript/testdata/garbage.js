}{)( => class function ` ${ 
