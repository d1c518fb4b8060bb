import { ApiProperty } from '@nestjs/swagger';
import type { PageView } from './page-request';

// The parsing and the view are plain functions (page-request.ts) that code outside Nest can use too.
export {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  type PageRequest,
  paginationView,
  parsePageRequest,
  type RawQuery,
} from './page-request';

export class PaginationView implements PageView {
  @ApiProperty({ example: 1 }) page_number: number;
  @ApiProperty({ example: 10 }) page_size: number;
  @ApiProperty({ example: 42 }) total_entries: number;
  @ApiProperty({ example: 5 }) total_pages: number;
}
